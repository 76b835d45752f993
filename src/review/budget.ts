// The reviewer's input budget. No tokenizer matching every provider is bundled, so the estimate
// is deliberately conservative: one UTF-8 byte counts as one token, which over-counts every
// real tokenizer. The budget covers everything sent: system prompt, input, the format-retry
// reminder and a fixed allowance for the provider's message framing.

export const BUDGET_MIN = 2048;
export const BUDGET_MAX = 32_768;
export const BUDGET_DEFAULT = 8192;

/** Role markers, message wrappers and the like that a provider adds around our text. */
export const FRAMING_RESERVE = 64;

export type TokenBudget = number & { readonly __brand: "TokenBudget" };

export function estimateTokens(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

export type BudgetCheck = { readonly ok: true; readonly budget: TokenBudget } | { readonly ok: false; readonly message: string };

/** A budget from configuration or a flag: an integer in [2,048, 32,768]. */
export function checkBudget(value: unknown): BudgetCheck {
  if (typeof value !== "number" || !Number.isInteger(value))
    return { ok: false, message: `the reviewer token budget must be an integer (got ${JSON.stringify(value)})` };
  if (value < BUDGET_MIN || value > BUDGET_MAX)
    return { ok: false, message: `the reviewer token budget must be between ${BUDGET_MIN} and ${BUDGET_MAX} (got ${value})` };
  return { ok: true, budget: value as TokenBudget };
}

export const DEFAULT_BUDGET = BUDGET_DEFAULT as TokenBudget;

/**
 * Cut a string to at most `maxBytes` UTF-8 bytes, keeping its head and tail (the end of a long
 * message often holds the actual request) and saying how much was left out. Never splits a
 * character.
 */
export function clipMiddle(text: string, maxBytes: number): string {
  const total = estimateTokens(text);
  if (total <= maxBytes) return text;
  const marker = (n: number) => ` …[${n} bytes omitted]… `;
  const room = Math.max(0, maxBytes - estimateTokens(marker(total)));
  const head = takeBytes(text, Math.ceil(room * 0.6));
  const tail = takeBytesFromEnd(text, room - estimateTokens(head));
  return head + marker(total - estimateTokens(head) - estimateTokens(tail)) + tail;
}

/** The longest prefix of at most `maxBytes` UTF-8 bytes. */
export function takeBytes(text: string, maxBytes: number): string {
  let bytes = 0;
  let out = "";
  for (const ch of text) {
    const n = estimateTokens(ch);
    if (bytes + n > maxBytes) break;
    bytes += n;
    out += ch;
  }
  return out;
}

function takeBytesFromEnd(text: string, maxBytes: number): string {
  // Every UTF-16 unit is at least one UTF-8 byte, so the answer lies within the last maxBytes
  // units; a low surrogate cut off from its pair at that edge is dropped.
  let window = text.slice(Math.max(0, text.length - maxBytes));
  if (/^[\udc00-\udfff]/.test(window)) window = window.slice(1);
  const chars = [...window];
  let bytes = 0;
  let i = chars.length;
  while (i > 0) {
    const n = estimateTokens(chars[i - 1]!);
    if (bytes + n > maxBytes) break;
    bytes += n;
    i--;
  }
  return chars.slice(i).join("");
}

/** Cut to at most `maxBytes`, keeping the head: for evidence, where the start says the most. */
export function clipHead(text: string, maxBytes: number): string {
  const total = estimateTokens(text);
  if (total <= maxBytes) return text;
  const marker = (n: number) => ` …[${n} bytes omitted]`;
  const head = takeBytes(text, Math.max(0, maxBytes - estimateTokens(marker(total))));
  return head + marker(total - estimateTokens(head));
}

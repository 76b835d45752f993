// What a classifier's raw 2xx body says twice. pi-ai's classifier clients read one answer per
// question and keep, of two with the same id, whichever their parser meets last (the later key of
// a JSON object, the later entry of openai-decisions' answers list). Two answers for one condition
// are an ambiguous reply, never the later one's word (P5): the engine reads the body alongside the
// client and treats a repeated key or a repeated answer name as malformed.

/** The first key an object of `text` repeats, or an answers list's repeated name; undefined when none (or not JSON). */
export function repeatedAnswer(text: string): string | undefined {
  let i = 0;
  const n = text.length;
  const ws = () => {
    while (i < n && (text[i] === " " || text[i] === "\n" || text[i] === "\r" || text[i] === "\t")) i++;
  };
  const str = (): string => {
    // At the opening quote; JSON.parse decodes the escapes exactly.
    const start = i++;
    while (i < n && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  let found: string | undefined;
  const value = (depth: number): unknown => {
    if (depth > 64) throw new Error("too deep");
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const keys = new Set<string>();
      const obj: Record<string, unknown> = {};
      ws();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        const k = str();
        if (keys.has(k)) found ??= `the key ${JSON.stringify(k)} appears twice in one object`;
        keys.add(k);
        ws();
        i++; // ':'
        const v = value(depth + 1);
        if (k === "answers" && Array.isArray(v)) {
          const names = v.map((a) => (typeof a === "object" && a !== null ? (a as { name?: unknown }).name : undefined)).filter((x) => typeof x === "string");
          const dup = names.find((x, j) => names.indexOf(x) !== j);
          if (dup !== undefined) found ??= `two answers are named ${JSON.stringify(dup)}`;
        }
        if (!Object.hasOwn(obj, k)) Object.defineProperty(obj, k, { value: v, enumerable: true });
        ws();
        if (text[i++] === "}") return obj;
      }
    }
    if (c === "[") {
      i++;
      const arr: unknown[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        if (text[i++] === "]") return arr;
      }
    }
    if (c === '"') return str();
    const start = i;
    while (i < n && !",}] \n\r\t".includes(text[i]!)) i++;
    if (i === start) throw new Error("not JSON");
    return undefined;
  };
  try {
    JSON.parse(text);
    value(0);
  } catch {
    // Not JSON: the client's own parser reports that.
    return undefined;
  }
  return found;
}

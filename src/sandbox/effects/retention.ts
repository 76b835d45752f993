// How much of a file's content survives a rewrite, in order: the bytes of its words (letters,
// digits and underscores) that stand in the new content in the same order, by a word-level
// longest common subsequence. Reindenting, requoting and reflowing keep every word; a one-word
// `sed` edit keeps all but that word; moving a block keeps the rest; sorting the words of a file
// keeps almost nothing, though every word is still there (a bag of words would call it kept).
// Binary content keeps the 4 KiB blocks that are still where they were.
//
// The exact subsequence is quadratic, so it is computed only on small stretches: common prefix and
// suffix are taken first, then words that occur once on each side anchor the rest (patience diff),
// and only the stretches between anchors small enough for the table are solved exactly. Every step
// finds a real common subsequence, so what is reported kept is never more than what was: where the
// bound cuts, the measure errs towards loss.

const WORD = /[\p{L}\p{N}_]+/gu;
const BLOCK = 4096;
/** Cells of the exact table for one stretch (before words × after words). */
const MAX_CELLS = 250_000;
/** Nesting of anchor passes before a stretch is left unmatched. */
const MAX_DEPTH = 24;

export interface Retention {
  /** Bytes of content `before` had (of its words; of all bytes when binary). */
  readonly total: number;
  /** Of those, the bytes `after` still holds in order. */
  readonly kept: number;
}

export function isBinary(b: Buffer): boolean {
  return b.subarray(0, 8000).includes(0);
}

export function retention(before: Buffer, after: Buffer): Retention {
  if (isBinary(before) || isBinary(after)) return blockRetention(before, after);
  const dictionary = new Map<string, number>();
  const a = words(before.toString("utf8"), dictionary);
  const b = words(after.toString("utf8"), dictionary);
  const total = a.bytes.reduce((n, x) => n + x, 0);
  if (before.equals(after)) return { total, kept: total };
  return { total, kept: keptBytes(a, b) };
}

/** Bytes of `before` that `after` no longer holds in order; emptying a file of no words loses its size. */
export function lostBytes(before: Buffer, after: Buffer): number {
  if (before.equals(after)) return 0;
  const r = retention(before, after);
  const lost = r.total - r.kept;
  if (lost === 0 && after.length === 0) return before.length;
  return lost;
}

interface Words {
  /** Each word as a small integer (equal words, equal ids, on both sides of one comparison). */
  readonly ids: Int32Array;
  readonly bytes: number[];
}

function words(text: string, dictionary: Map<string, number>): Words {
  const ids: number[] = [];
  const bytes: number[] = [];
  for (const m of text.matchAll(WORD)) {
    let id = dictionary.get(m[0]);
    if (id === undefined) {
      id = dictionary.size;
      dictionary.set(m[0], id);
    }
    ids.push(id);
    bytes.push(Buffer.byteLength(m[0]));
  }
  return { ids: Int32Array.from(ids), bytes };
}

function keptBytes(a: Words, b: Words): number {
  let kept = 0;
  const stack: [number, number, number, number, number][] = [[0, a.ids.length, 0, b.ids.length, 0]];
  while (stack.length > 0) {
    let [a0, a1, b0, b1, depth] = stack.pop()!;
    while (a0 < a1 && b0 < b1 && a.ids[a0] === b.ids[b0]) (kept += a.bytes[a0++]!), b0++;
    while (a0 < a1 && b0 < b1 && a.ids[a1 - 1] === b.ids[b1 - 1]) (kept += a.bytes[--a1]!), b1--;
    if (a0 === a1 || b0 === b1) continue;
    if ((a1 - a0) * (b1 - b0) <= MAX_CELLS) {
      kept += exact(a, b, a0, a1, b0, b1);
      continue;
    }
    if (depth >= MAX_DEPTH) continue;
    const anchors = uniqueAnchors(a.ids, b.ids, a0, a1, b0, b1);
    if (anchors.length === 0) continue;
    let pa = a0;
    let pb = b0;
    for (const [i, j] of anchors) {
      stack.push([pa, i, pb, j, depth + 1]);
      kept += a.bytes[i]!;
      pa = i + 1;
      pb = j + 1;
    }
    stack.push([pa, a1, pb, b1, depth + 1]);
  }
  return kept;
}

/** The weighted longest common subsequence of two stretches, by the table (two rows). */
function exact(a: Words, b: Words, a0: number, a1: number, b0: number, b1: number): number {
  const m = b1 - b0;
  let prev = new Float64Array(m + 1);
  let cur = new Float64Array(m + 1);
  for (let i = a0; i < a1; i++) {
    const id = a.ids[i];
    const w = a.bytes[i]!;
    cur[0] = 0;
    for (let j = 1; j <= m; j++) {
      const diag = b.ids[b0 + j - 1] === id ? prev[j - 1]! + w : 0;
      cur[j] = Math.max(diag, prev[j]!, cur[j - 1]!);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[m]!;
}

/**
 * Pairs (i, j) of words that occur exactly once in each stretch, in the longest chain increasing
 * on both sides (patience sorting): a common subsequence to split the stretches at.
 */
function uniqueAnchors(a: Int32Array, b: Int32Array, a0: number, a1: number, b0: number, b1: number): [number, number][] {
  const inA = new Map<number, number>();
  for (let i = a0; i < a1; i++) inA.set(a[i]!, inA.has(a[i]!) ? -1 : i);
  const inB = new Map<number, number>();
  for (let j = b0; j < b1; j++) inB.set(b[j]!, inB.has(b[j]!) ? -1 : j);
  const pairs: [number, number][] = [];
  for (let i = a0; i < a1; i++) {
    const ia = inA.get(a[i]!)!;
    const jb = inB.get(a[i]!);
    if (ia === i && jb !== undefined && jb >= 0) pairs.push([i, jb]);
  }
  // Longest increasing run of j over pairs ordered by i.
  const tails: number[] = [];
  const back = new Int32Array(pairs.length).fill(-1);
  for (let k = 0; k < pairs.length; k++) {
    const j = pairs[k]![1];
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairs[tails[mid]!]![1] < j) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) back[k] = tails[lo - 1]!;
    tails[lo] = k;
  }
  const out: [number, number][] = [];
  for (let k = tails.length > 0 ? tails[tails.length - 1]! : -1; k >= 0; k = back[k]!) out.push(pairs[k]!);
  return out.reverse();
}

function blockRetention(before: Buffer, after: Buffer): Retention {
  let kept = 0;
  for (let at = 0; at < before.length; at += BLOCK) {
    const end = Math.min(at + BLOCK, before.length);
    if (end <= after.length && before.subarray(at, end).equals(after.subarray(at, end))) kept += end - at;
  }
  return { total: before.length, kept };
}

// How much of a file's content an overwrite loses: the bytes of its words (letters, digits and
// underscores) that no longer appear in the new content, counted with multiplicity. Reformatting,
// reindenting, reordering and quoting changes lose nothing; emptying or truncating a file loses
// what went; `s/foo/bar/` loses the foos. Binary content (a database, an image) loses the 4 KiB
// blocks that are not where they were: a database updating a few pages loses little, an image
// overwritten with another loses all of it.

const WORD = /[\p{L}\p{N}_]+/gu;

function isBinary(b: Buffer): boolean {
  return b.subarray(0, 8000).includes(0);
}

function words(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const w of text.matchAll(WORD)) m.set(w[0], (m.get(w[0]) ?? 0) + 1);
  return m;
}

/** Bytes of `before` that `after` no longer holds. */
export function lostBytes(before: Buffer, after: Buffer): number {
  if (before.equals(after)) return 0;
  if (isBinary(before) || isBinary(after)) return lostBlocks(before, after);
  const now = words(after.toString("utf8"));
  let lost = 0;
  for (const [w, n] of words(before.toString("utf8"))) {
    const left = n - (now.get(w) ?? 0);
    if (left > 0) lost += left * Buffer.byteLength(w);
  }
  // A file of only punctuation and spaces still had content: emptying it is a loss of its size.
  if (lost === 0 && after.length === 0) return before.length;
  return lost;
}

const BLOCK = 4096;

function lostBlocks(before: Buffer, after: Buffer): number {
  let lost = 0;
  for (let at = 0; at < before.length; at += BLOCK) {
    const end = Math.min(at + BLOCK, before.length);
    if (end > after.length || !before.subarray(at, end).equals(after.subarray(at, end))) lost += end - at;
  }
  return lost;
}

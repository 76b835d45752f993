// A read-only git object store: loose objects and version-2 pack indexes with their packs, over
// one or more `objects` directories searched in order. It never runs git: after a sandboxed command
// ran, the repository it touched is data to judge, and running git there would run that
// repository's configuration (fsmonitor, textconv, hooks) as well.
//
// Everything the repository holds is treated as hostile input. Reads are bounded (object size,
// delta chain length, tree entries, file sizes), every object returned is hashed again and must
// carry the id it was asked for (a planted or corrupted object is simply absent), files are opened
// without following a final symlink and without blocking on a FIFO, and bad data makes `read`
// answer undefined instead of throwing.

import { createHash } from "node:crypto";
import { closeSync, lstatSync, readSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { hashLength, isOid, readFileBounded, type ObjectFormat } from "./bounded.ts";
import { listDir, openRegular } from "../stage-read.ts";

export { hashLength, isOid, readFileBounded, type ObjectFormat };

export type ObjectType = "commit" | "tree" | "blob" | "tag";
export type GitObject = { type: ObjectType; data: Buffer };

export type ObjectStore = {
  readonly format: ObjectFormat;
  /**
   * The object, hashed again and checked against `oid`; undefined when absent or unreadable. The
   * data may be shared with the store's cache: treat it as read-only (a modified copy would only
   * fail its hash check later, never be returned as another object's content).
   */
  read(oid: string): GitObject | undefined;
  /** Listed by a valid pack index or present as a loose file (its content is not checked). */
  has(oid: string): boolean;
  /** Closes the pack files the store opened; the store must not be used afterwards. */
  close(): void;
};

export type TreeEntry = { mode: string; name: string; oid: string };

export type Commit = { tree: string; parents: string[]; author: string; committer: string; message: string };

/** Larger objects are treated as absent: nothing this tool judges needs them whole. */
export const MAX_OBJECT_SIZE = 256 * 1024 * 1024;
/** Deltas on deltas beyond this are treated as absent (git's own default depth is 50). */
export const MAX_DELTA_CHAIN = 10_000;
export const MAX_TREE_ENTRIES = 1 << 20;
/** Bytes of resolved delta bases kept, so walking a long chain does not inflate it again. */
const BASE_CACHE_BYTES = 32 * 1024 * 1024;
const BASE_CACHE_ENTRIES = 8192;
/** Compressed delta bytes held while walking down one chain. */
const CHAIN_HELD_BYTES = 8 * 1024 * 1024;
/** A pack index this large would describe tens of millions of objects: refuse it. */
const MAX_IDX_BYTES = 1024 * 1024 * 1024;

function checkOid(oid: string, format: ObjectFormat): void {
  if (typeof oid !== "string" || !isOid(oid, format)) {
    throw new TypeError(`not a lowercase ${format} object id: ${String(oid)}`);
  }
}

/** The object id git gives `content` stored as `type`. */
export function hashObject(type: ObjectType, content: Buffer, format: ObjectFormat = "sha1"): string {
  return createHash(format).update(`${type} ${content.length}\0`).update(content).digest("hex");
}

// ---------------------------------------------------------------------------------------------
// Files

/** Exactly `length` bytes at `position`, or undefined (short file, I/O error). */
function readAt(fd: number, length: number, position: number): Buffer | undefined {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  try {
    while (got < length) {
      const n = readSync(fd, buf, got, length - got, position + got);
      if (n <= 0) return undefined;
      got += n;
    }
  } catch {
    return undefined;
  }
  return buf;
}

/** zlib-inflates exactly `size` bytes, or undefined (corrupt, short, or longer than declared). */
function inflateExact(input: Buffer, size: number): Buffer | undefined {
  try {
    // maxOutputLength: one byte more than declared so "too long" is told apart from "exact".
    const out = inflateSync(input, { maxOutputLength: size + 1 });
    return out.length === size ? out : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Object parsing

const TYPES: readonly ObjectType[] = ["commit", "tree", "blob", "tag"];
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A commit's headers and message. The header order is the one git itself requires (tree, parents,
 * author, committer); other headers (encoding, gpgsig, mergetag, with their space-indented
 * continuation lines) are skipped.
 */
export function parseCommit(data: Buffer, format?: ObjectFormat): Commit | undefined {
  const end = data.indexOf("\n\n");
  const head = data.subarray(0, end < 0 ? data.length : end).toString("utf8");
  const message = end < 0 ? "" : data.subarray(end + 2).toString("utf8");
  const lines = head.split("\n");
  const oidOk = (s: string): boolean => (format ? isOid(s, format) : isOid(s, "sha1") || isOid(s, "sha256"));
  let i = 0;
  const tree = lines[i]?.startsWith("tree ") ? lines[i]!.slice(5) : undefined;
  if (tree === undefined || !oidOk(tree)) return undefined;
  i++;
  const parents: string[] = [];
  while (lines[i]?.startsWith("parent ")) {
    const p = lines[i]!.slice(7);
    // One object format per commit: a 40-digit tree with a 64-digit parent is not a git commit.
    if (!oidOk(p) || p.length !== tree.length) return undefined;
    parents.push(p);
    i++;
  }
  if (!lines[i]?.startsWith("author ")) return undefined;
  const author = lines[i]!.slice(7);
  i++;
  if (!lines[i]?.startsWith("committer ")) return undefined;
  const committer = lines[i]!.slice(10);
  return { tree, parents, author, committer, message };
}

/**
 * A tree's entries in stored order. Names that could make a path ambiguous ("", ".", "..", a
 * slash, a repeated name, bytes that are not UTF-8 and so would not decode to one string) make the
 * whole tree malformed: git's fsck rejects them too, and a judge must not guess which one counts.
 */
export function parseTree(data: Buffer, format: ObjectFormat = "sha1"): TreeEntry[] | undefined {
  const hl = hashLength(format);
  const out: TreeEntry[] = [];
  const names = new Set<string>();
  let p = 0;
  while (p < data.length) {
    if (out.length >= MAX_TREE_ENTRIES) return undefined;
    const sp = data.indexOf(0x20, p);
    if (sp < 0 || sp - p < 1 || sp - p > 7) return undefined;
    const mode = data.toString("latin1", p, sp);
    if (!/^[0-7]+$/.test(mode)) return undefined;
    const nul = data.indexOf(0, sp + 1);
    if (nul < 0 || nul + 1 + hl > data.length) return undefined;
    let name: string;
    try {
      name = STRICT_UTF8.decode(data.subarray(sp + 1, nul));
    } catch {
      return undefined;
    }
    if (name === "" || name === "." || name === ".." || name.includes("/") || names.has(name)) return undefined;
    names.add(name);
    out.push({ mode, name, oid: data.toString("hex", nul + 1, nul + 1 + hl) });
    p = nul + 1 + hl;
  }
  return out;
}

/**
 * The entry at `path` ("a/b/c") below the tree `treeOid`; "" names the tree itself. Undefined when
 * any step is missing, unreadable or not a tree.
 */
export function treeEntryAt(store: ObjectStore, treeOid: string, path: string): { mode: string; oid: string } | undefined {
  const parts = path === "" ? [] : path.split("/");
  if (parts.some((x) => x === "" || x === "." || x === "..")) return undefined;
  let current = { mode: "40000", oid: treeOid };
  if (parts.length === 0) return store.read(treeOid)?.type === "tree" ? current : undefined;
  for (const part of parts) {
    if (current.mode !== "40000" && current.mode !== "040000") return undefined;
    const obj = store.read(current.oid);
    if (obj?.type !== "tree") return undefined;
    const entry = parseTree(obj.data, store.format)?.find((e) => e.name === part);
    if (!entry) return undefined;
    current = { mode: entry.mode, oid: entry.oid };
  }
  return current;
}

/** "<type> <size>\0<data>" of a loose object, checked; undefined when anything is off. */
function parseLoose(raw: Buffer): GitObject | undefined {
  const nul = raw.indexOf(0);
  if (nul < 0 || nul > 32) return undefined;
  const m = /^(commit|tree|blob|tag) (0|[1-9][0-9]*)$/.exec(raw.toString("latin1", 0, nul));
  if (!m) return undefined;
  const size = Number(m[2]);
  if (size > MAX_OBJECT_SIZE || raw.length - nul - 1 !== size) return undefined;
  return { type: m[1] as ObjectType, data: raw.subarray(nul + 1) };
}

// ---------------------------------------------------------------------------------------------
// Deltas

/** A little-endian base-128 size from a delta header; [value, next position] or undefined. */
function deltaSize(delta: Buffer, pos: number): [number, number] | undefined {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 8; i++) {
    const c = delta[pos++];
    if (c === undefined) return undefined;
    value += (c & 0x7f) * scale;
    scale *= 128;
    if (!(c & 0x80)) return value > MAX_OBJECT_SIZE ? undefined : [value, pos];
  }
  return undefined;
}

/**
 * Git's delta format: the base and result sizes, then copy instructions (high bit set: offset and
 * size bytes chosen by the low bits, size 0 meaning 0x10000) and insert instructions (1..127
 * literal bytes). Every copy must lie inside the base and the result must have the stated size.
 */
export function applyDelta(base: Buffer, delta: Buffer): Buffer | undefined {
  const src = deltaSize(delta, 0);
  if (!src || src[0] !== base.length) return undefined;
  const dst = deltaSize(delta, src[1]);
  if (!dst) return undefined;
  const [size, start] = dst;
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  let p = start;
  while (p < delta.length) {
    const op = delta[p++]!;
    if (op & 0x80) {
      let off = 0;
      let len = 0;
      for (let bit = 0; bit < 4; bit++) {
        if (op & (1 << bit)) {
          const b = delta[p++];
          if (b === undefined) return undefined;
          off += b * 2 ** (8 * bit);
        }
      }
      for (let bit = 0; bit < 3; bit++) {
        if (op & (0x10 << bit)) {
          const b = delta[p++];
          if (b === undefined) return undefined;
          len += b * 2 ** (8 * bit);
        }
      }
      if (len === 0) len = 0x10000;
      if (off + len > base.length || o + len > size) return undefined;
      base.copy(out, o, off, off + len);
      o += len;
    } else if (op !== 0) {
      if (p + op > delta.length || o + op > size) return undefined;
      delta.copy(out, o, p, p + op);
      o += op;
      p += op;
    } else {
      return undefined; // opcode 0 is reserved
    }
  }
  return o === size ? out : undefined;
}

// ---------------------------------------------------------------------------------------------
// Pack index (version 2) and pack entries

type PackIndex = {
  /** Names the pack in the base cache's keys. */
  readonly id: number;
  readonly packPath: string;
  readonly count: number;
  readonly idx: Buffer;
  readonly oids: number; // byte offset of the sorted id table
  readonly offsets: number; // byte offset of the 32-bit offset table
  readonly large: number; // byte offset of the 64-bit offset table
  readonly largeCount: number;
  readonly packChecksum: Buffer;
  /** Opened on first entry read: undefined not yet, null unusable. */
  fd: number | null | undefined;
  packEnd: number; // where entries end (the pack's trailing checksum starts)
  /** Entry offsets sorted, to know where each compressed entry ends. Built on first use. */
  sorted: Float64Array | undefined;
};

const IDX_MAGIC = Buffer.from([0xff, 0x74, 0x4f, 0x63]);

/** A version-2 index, checked (size, fanout, its own checksum); undefined for anything else. */
function parseIndex(id: number, idx: Buffer, packPath: string, format: ObjectFormat): PackIndex | undefined {
  const hl = hashLength(format);
  if (idx.length < 8 + 1024 + 2 * hl || !idx.subarray(0, 4).equals(IDX_MAGIC) || idx.readUInt32BE(4) !== 2) {
    return undefined; // version 1 has no magic: also refused here
  }
  let prev = 0;
  for (let i = 0; i < 256; i++) {
    const v = idx.readUInt32BE(8 + 4 * i);
    if (v < prev) return undefined;
    prev = v;
  }
  const count = prev;
  const oids = 8 + 1024;
  const offsets = oids + count * (hl + 4);
  const large = offsets + count * 4;
  const rest = idx.length - large - 2 * hl;
  if (rest < 0 || rest % 8 !== 0) return undefined;
  const body = idx.subarray(0, idx.length - hl);
  if (
    !createHash(format)
      .update(body)
      .digest()
      .equals(idx.subarray(idx.length - hl))
  )
    return undefined;
  return {
    id,
    packPath,
    count,
    idx,
    oids,
    offsets,
    large,
    largeCount: rest / 8,
    packChecksum: idx.subarray(idx.length - 2 * hl, idx.length - hl),
    fd: undefined,
    packEnd: 0,
    sorted: undefined,
  };
}

/** The position of `raw` in the sorted id table, by fanout then binary search; -1 when absent. */
function findInIndex(p: PackIndex, raw: Buffer): number {
  const hl = raw.length;
  const first = raw[0]!;
  let lo = first === 0 ? 0 : p.idx.readUInt32BE(8 + 4 * (first - 1));
  let hi = p.idx.readUInt32BE(8 + 4 * first);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = p.oids + mid * hl;
    const c = p.idx.compare(raw, 0, hl, at, at + hl);
    if (c === 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

function entryOffset(p: PackIndex, i: number): number | undefined {
  const v = p.idx.readUInt32BE(p.offsets + 4 * i);
  if (!(v & 0x80000000)) return v;
  const j = v & 0x7fffffff;
  if (j >= p.largeCount) return undefined;
  const big = p.idx.readBigUInt64BE(p.large + 8 * j);
  return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : undefined;
}

/** Opens the pack on first use and checks it belongs to this index (header count, trailer). */
function packFd(p: PackIndex, format: ObjectFormat): number | undefined {
  if (p.fd === null) return undefined;
  if (p.fd !== undefined) return p.fd;
  p.fd = null;
  const opened = openRegular(p.packPath);
  if (!opened) return undefined;
  const { fd, size } = opened;
  const hl = hashLength(format);
  let ok = false;
  try {
    if (size >= 12 + hl) {
      const head = readAt(fd, 12, 0);
      const tail = readAt(fd, hl, size - hl);
      ok =
        head !== undefined &&
        tail !== undefined &&
        head.toString("latin1", 0, 4) === "PACK" &&
        [2, 3].includes(head.readUInt32BE(4)) &&
        head.readUInt32BE(8) === p.count &&
        tail.equals(p.packChecksum);
      p.packEnd = size - hl;
    }
  } catch {
    ok = false;
  }
  if (!ok) {
    closeSync(fd);
    return undefined;
  }
  p.fd = fd;
  return fd;
}

/** Where the entry at `offset` ends: the next entry's offset, or the pack trailer. */
function entryEnd(p: PackIndex, offset: number): number | undefined {
  if (!p.sorted) {
    const s = new Float64Array(p.count);
    for (let i = 0; i < p.count; i++) {
      const o = entryOffset(p, i);
      if (o === undefined) {
        p.sorted = new Float64Array(0); // a bad offset table: no entry of this pack is read
        return undefined;
      }
      s[i] = o;
    }
    p.sorted = s.sort();
  }
  const s = p.sorted;
  let lo = 0;
  let hi = s.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (s[mid]! < offset) lo = mid + 1;
    else hi = mid;
  }
  // An offset no index entry names is not an entry start (a forged OFS_DELTA base, say).
  if (s[lo] !== offset) return undefined;
  return lo + 1 < s.length ? s[lo + 1]! : p.packEnd;
}

type EntryHead = ({ kind: "whole"; type: ObjectType } | { kind: "ofs"; base: number } | { kind: "ref"; base: string }) & {
  size: number;
  dataStart: number;
  dataEnd: number;
  /** The compressed data when the first read already covered it (most entries are small). */
  raw: Buffer | undefined;
};

/** Entries up to this size are read with one positioned read, header and data together. */
const SMALL_ENTRY = 16 * 1024;

/** Decodes the type/size header (and delta base) of the entry at `offset`. */
function readEntryHead(p: PackIndex, fd: number, offset: number, format: ObjectFormat): EntryHead | undefined {
  const hl = hashLength(format);
  if (offset < 12 || offset >= p.packEnd) return undefined;
  const end = entryEnd(p, offset);
  if (end === undefined || end <= offset) return undefined;
  const chunk = readAt(fd, Math.min(Math.max(32 + hl, SMALL_ENTRY), end - offset), offset);
  if (!chunk) return undefined;
  const byte = (i: number): number => (i < chunk.length && i < 32 + hl ? chunk[i]! : -1);
  let pos = 0;
  let c = byte(pos++);
  const type = (c >> 4) & 7;
  let size = c & 15;
  let scale = 16;
  while (c & 0x80) {
    c = byte(pos++);
    if (c < 0 || pos > 10) return undefined;
    size += (c & 0x7f) * scale;
    scale *= 128;
  }
  if (size > MAX_OBJECT_SIZE) return undefined;
  const rest = (dataStart: number): Pick<EntryHead, "size" | "dataStart" | "dataEnd" | "raw"> => ({
    size,
    dataStart: offset + dataStart,
    dataEnd: end,
    raw: end - offset <= chunk.length ? chunk.subarray(dataStart) : undefined,
  });
  if (type >= 1 && type <= 4) return { kind: "whole", type: TYPES[type - 1]!, ...rest(pos) };
  if (type === 6) {
    // Offset encoding with the "+1 per continuation" twist, so every length has one spelling.
    let b = byte(pos++);
    if (b < 0) return undefined;
    let back = b & 0x7f;
    while (b & 0x80) {
      b = byte(pos++);
      if (b < 0 || pos > 20) return undefined;
      back = (back + 1) * 128 + (b & 0x7f);
    }
    if (back <= 0 || back > offset) return undefined;
    return { kind: "ofs", base: offset - back, ...rest(pos) };
  }
  if (type === 7) {
    if (pos + hl > chunk.length) return undefined;
    return { kind: "ref", base: chunk.toString("hex", pos, pos + hl), ...rest(pos + hl) };
  }
  return undefined;
}

function inflateEntry(fd: number, h: EntryHead): Buffer | undefined {
  const len = h.dataEnd - h.dataStart;
  // zlib never needs much more than its input size; a far larger gap is not an entry git wrote.
  if (len <= 0 || len > h.size + (h.size >>> 3) + 1024) return undefined;
  const raw = h.raw ?? readAt(fd, len, h.dataStart);
  return raw && inflateExact(raw, h.size);
}

// ---------------------------------------------------------------------------------------------
// The store

type ObjectsDir = { path: string; packs: PackIndex[] | undefined };

type CacheNode = { key: string; obj: GitObject; prev: CacheNode | undefined; next: CacheNode | undefined };

/**
 * Resolved pack entries by "pack:offset", bounded by bytes and count, least recently used
 * evicted first. A linked list rather than a Map's insertion order: V8 leaves deleted slots in a
 * Map until it rehashes, so "evict the first entry" there slows down as the cache churns.
 */
class BaseCache {
  private readonly map = new Map<string, CacheNode>();
  private head: CacheNode | undefined; // most recent
  private tail: CacheNode | undefined; // least recent
  private bytes = 0;
  private readonly maxBytes: number;
  private readonly maxEntries: number;

  constructor(maxBytes: number, maxEntries: number) {
    this.maxBytes = maxBytes;
    this.maxEntries = maxEntries;
  }

  get(key: string): GitObject | undefined {
    const n = this.map.get(key);
    if (!n) return undefined;
    this.unlink(n);
    this.pushFront(n);
    return n.obj;
  }

  put(key: string, obj: GitObject): void {
    if (obj.data.length > this.maxBytes / 4 || this.map.has(key)) return;
    const n: CacheNode = { key, obj, prev: undefined, next: undefined };
    this.map.set(key, n);
    this.pushFront(n);
    this.bytes += obj.data.length;
    while ((this.bytes > this.maxBytes || this.map.size > this.maxEntries) && this.tail) {
      const old = this.tail;
      this.unlink(old);
      this.map.delete(old.key);
      this.bytes -= old.obj.data.length;
    }
  }

  clear(): void {
    this.map.clear();
    this.head = this.tail = undefined;
    this.bytes = 0;
  }

  private unlink(n: CacheNode): void {
    if (n.prev) n.prev.next = n.next;
    else this.head = n.next;
    if (n.next) n.next.prev = n.prev;
    else this.tail = n.prev;
    n.prev = n.next = undefined;
  }

  private pushFront(n: CacheNode): void {
    n.next = this.head;
    if (this.head) this.head.prev = n;
    this.head = n;
    if (!this.tail) this.tail = n;
  }
}

export function openObjectStore(dirs: readonly string[], format: ObjectFormat = "sha1"): ObjectStore {
  if (format !== "sha1" && format !== "sha256") throw new TypeError(`unknown object format: ${String(format)}`);
  const all: ObjectsDir[] = dirs.map((path) => ({ path, packs: undefined }));
  let packIds = 0;
  const cache = new BaseCache(BASE_CACHE_BYTES, BASE_CACHE_ENTRIES);
  let closed = false;

  function packsOf(d: ObjectsDir): PackIndex[] {
    if (d.packs) return d.packs;
    d.packs = [];
    let names: string[];
    try {
      names = listDir(join(d.path, "pack"))
        .filter((n) => n.endsWith(".idx"))
        .sort();
    } catch {
      return d.packs;
    }
    for (const n of names) {
      const idx = readFileBounded(join(d.path, "pack", n), MAX_IDX_BYTES);
      const parsed = idx && parseIndex(packIds++, idx, join(d.path, "pack", n.slice(0, -4) + ".pack"), format);
      if (parsed) d.packs.push(parsed);
    }
    return d.packs;
  }

  function cacheGet(p: PackIndex, offset: number): GitObject | undefined {
    return cache.get(`${p.id}:${offset}`);
  }

  function cachePut(p: PackIndex, offset: number, obj: GitObject): void {
    cache.put(`${p.id}:${offset}`, obj);
  }

  function findPacked(raw: Buffer): { p: PackIndex; offset: number } | undefined {
    for (const d of all) {
      for (const p of packsOf(d)) {
        const i = findInIndex(p, raw);
        if (i < 0) continue;
        const offset = entryOffset(p, i);
        if (offset !== undefined) return { p, offset };
      }
    }
    return undefined;
  }

  function readLoose(dir: string, oid: string): GitObject | undefined {
    // zlib expands incompressible data by a few bytes per block: allow a little over the bound.
    const file = readFileBounded(join(dir, oid.slice(0, 2), oid.slice(2)), MAX_OBJECT_SIZE + (MAX_OBJECT_SIZE >>> 6));
    if (!file) return undefined;
    let raw: Buffer;
    try {
      raw = inflateSync(file, { maxOutputLength: MAX_OBJECT_SIZE + 64 });
    } catch {
      return undefined;
    }
    return parseLoose(raw);
  }

  function readLooseAnywhere(oid: string): GitObject | undefined {
    for (const d of all) {
      const obj = readLoose(d.path, oid);
      if (obj && hashObject(obj.type, obj.data, format) === oid) return obj;
    }
    return undefined;
  }

  /**
   * Resolves the entry at (pack, offset) without recursion: walk down the delta chain recording
   * each delta's position, stop at a whole object, a cached result or a loose REF_DELTA base, then
   * apply the deltas back up. On the way down only positions are held (and the compressed bytes of
   * small deltas, within CHAIN_HELD_BYTES), so a long chain costs about one delta's memory at a
   * time, not the whole chain's inflated.
   */
  function readPacked(start: PackIndex, startOffset: number): GitObject | undefined {
    const chain: Array<{ p: PackIndex; offset: number; head: EntryHead; fd: number }> = [];
    let p = start;
    let offset = startOffset;
    let base: GitObject | undefined;
    let heldBytes = 0;
    for (;;) {
      if (chain.length >= MAX_DELTA_CHAIN) return undefined;
      base = cacheGet(p, offset);
      if (base) break;
      const fd = packFd(p, format);
      if (fd === undefined) return undefined;
      const head = readEntryHead(p, fd, offset, format);
      if (!head) return undefined;
      if (head.kind === "whole") {
        const data = inflateEntry(fd, head);
        if (!data) return undefined;
        base = { type: head.type, data };
        cachePut(p, offset, base);
        break;
      }
      // Small deltas keep their compressed bytes for the way back up, within a budget; the rest
      // are read again then.
      if (head.raw && (heldBytes += head.raw.length) > CHAIN_HELD_BYTES) head.raw = undefined;
      chain.push({ p, offset, head, fd });
      if (head.kind === "ofs") {
        offset = head.base;
        continue;
      }
      // REF_DELTA: the base may live in any pack of any directory, or be loose.
      const found = findPacked(Buffer.from(head.base, "hex"));
      if (found) {
        p = found.p;
        offset = found.offset;
        continue;
      }
      base = readLooseAnywhere(head.base);
      if (!base) return undefined;
      break;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const link = chain[i]!;
      const delta = inflateEntry(link.fd, link.head);
      const data: Buffer | undefined = delta && applyDelta(base.data, delta);
      if (!data) return undefined;
      base = { type: base.type, data };
      cachePut(link.p, link.offset, base);
    }
    return base;
  }

  function live(): void {
    if (closed) throw new Error("object store is closed");
  }

  return {
    format,
    read(oid: string): GitObject | undefined {
      checkOid(oid, format);
      live();
      const raw = Buffer.from(oid, "hex");
      for (const d of all) {
        for (const p of packsOf(d)) {
          const i = findInIndex(p, raw);
          const offset = i < 0 ? undefined : entryOffset(p, i);
          if (offset === undefined) continue;
          const obj = readPacked(p, offset);
          // Checked against the id asked for: a corrupt or planted entry is as good as absent,
          // and another copy (another pack, a loose file) may still be the real one.
          if (obj && hashObject(obj.type, obj.data, format) === oid) return obj;
        }
        const obj = readLoose(d.path, oid);
        if (obj && hashObject(obj.type, obj.data, format) === oid) return obj;
      }
      return undefined;
    },
    has(oid: string): boolean {
      checkOid(oid, format);
      live();
      if (findPacked(Buffer.from(oid, "hex"))) return true;
      return all.some((d) => {
        try {
          return lstatSync(join(d.path, oid.slice(0, 2), oid.slice(2))).isFile();
        } catch {
          return false;
        }
      });
    },
    close(): void {
      if (closed) return;
      closed = true;
      for (const d of all) {
        for (const p of d.packs ?? []) {
          if (typeof p.fd === "number") closeSync(p.fd);
          p.fd = null;
        }
      }
      cache.clear();
    },
  };
}

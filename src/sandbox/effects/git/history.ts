// Commit-graph questions over an ObjectStore: was a ref fast-forwarded, is an old tip still
// reachable, which commits did a command add. Every walk is bounded by a number of commits read
// and answers "unknown" past it, or when a commit it needs is missing or unreadable (a shallow
// clone's boundary, a corrupt object): the caller then judges without the answer instead of
// trusting a partial walk.
//
// No commit-graph file, grafts or replace refs are consulted: only the objects themselves.

import { isOid, parseCommit, type ObjectStore } from "./objects.ts";

/** git's own slack for committers' clocks when it cuts a walk short by date. */
const CLOCK_SKEW_SECONDS = 24 * 60 * 60;
const MAX_TAG_DEPTH = 32;

type Node = { oid: string; parents: string[]; time: number };

/**
 * The committer time as git reads it (parse_commit_date): the digits after the last ">" of the
 * committer line; 0 when there are none, as in git.
 */
function committerTime(ident: string): number {
  const m = /^[ \t]*(\d+)/.exec(ident.slice(ident.lastIndexOf(">") + 1));
  return m && ident.includes(">") ? Number(m[1]) : 0;
}

function loadCommit(store: ObjectStore, oid: string): Node | undefined {
  const obj = store.read(oid);
  if (obj?.type !== "commit") return undefined;
  const c = parseCommit(obj.data, store.format);
  return c && { oid, parents: c.parents, time: committerTime(c.committer) };
}

/**
 * Follows annotated tags to what they finally name: a commit id, "other" (a tag of a tree or a
 * blob, which reaches no commit) or "missing" (absent or unreadable somewhere on the way).
 */
export function peelToCommit(store: ObjectStore, oid: string): string | "other" | "missing" {
  let current = oid;
  for (let depth = 0; depth <= MAX_TAG_DEPTH; depth++) {
    const obj = store.read(current);
    if (!obj) return "missing";
    if (obj.type === "commit") return current;
    if (obj.type !== "tag") return "other";
    const m = /^object ([0-9a-f]+)\ntype (commit|tree|blob|tag)\n/.exec(obj.data.toString("latin1", 0, 200));
    if (!m || !isOid(m[1]!, store.format)) return "missing";
    current = m[1]!;
  }
  return "missing";
}

/**
 * A max-heap by committer time; equal times come out in insertion order, as git's date-ordered
 * lists and priority queues do, so walks visit commits in git's order.
 */
class DateQueue {
  private readonly heap: Array<{ node: Node; seq: number }> = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  push(node: Node): void {
    const h = this.heap;
    h.push({ node, seq: this.seq++ });
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  peek(): Node | undefined {
    return this.heap[0]?.node;
  }

  pop(): Node | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (top === undefined || last === undefined) return undefined;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let best = i;
        if (l < h.length && this.before(h[l]!, h[best]!)) best = l;
        if (r < h.length && this.before(h[r]!, h[best]!)) best = r;
        if (best === i) break;
        [h[i], h[best]] = [h[best]!, h[i]!];
        i = best;
      }
    }
    return top.node;
  }

  private before(a: { node: Node; seq: number }, b: { node: Node; seq: number }): boolean {
    return a.node.time > b.node.time || (a.node.time === b.node.time && a.seq < b.seq);
  }
}

/** Whether `descendant` (or a commit it reaches) is `ancestor`: `git merge-base --is-ancestor`. */
export function isAncestor(store: ObjectStore, ancestor: string, descendant: string, limit = 10_000): boolean | "unknown" {
  return reachableFromAny(store, ancestor, [descendant], limit);
}

/**
 * Whether `target` is reachable from any of `tips` (tags are peeled; a tip naming a tree or a blob
 * reaches nothing). The walk goes newest first and stops once every commit left to visit is older
 * than `target` by more than a day, since history is (nearly) ordered by committer time: a commit
 * dated further back than that ends the search, as git's own date-cut walks do. Commits forged
 * with dates skewed further than a day can make the answer false when it is true; never the other
 * way round.
 */
export function reachableFromAny(store: ObjectStore, target: string, tips: readonly string[], limit = 10_000): boolean | "unknown" {
  const t = peelToCommit(store, target);
  if (t === "missing" || t === "other") return "unknown";
  const goal = loadCommit(store, t);
  if (!goal) return "unknown";
  const cutoff = goal.time - CLOCK_SKEW_SECONDS;
  const queue = new DateQueue();
  const seen = new Set<string>();
  let incomplete = false;
  const visit = (oid: string): void => {
    if (seen.has(oid)) return;
    seen.add(oid);
    const node = seen.size <= limit ? loadCommit(store, oid) : undefined;
    if (node) queue.push(node);
    else incomplete = true;
  };
  for (const tip of tips) {
    const c = peelToCommit(store, tip);
    if (c === "missing") incomplete = true;
    else if (c !== "other") visit(c);
  }
  while (queue.size > 0) {
    const node = queue.pop()!;
    if (node.oid === t) return true;
    if (node.time < cutoff) break; // the newest left is too old: so is everything behind it
    for (const p of node.parents) visit(p);
  }
  return incomplete ? "unknown" : false;
}

type WalkState = {
  node: Node | undefined;
  seen: boolean;
  added: boolean;
  uninteresting: boolean;
  queued: boolean;
};

/**
 * The commits reachable from `from` but from none of `notFrom`, in `git rev-list from ^notFrom...`
 * order (newest first). This follows git's limit_list: a date-ordered walk that carries the
 * "uninteresting" mark down from `notFrom`, ends once only uninteresting commits are left and
 * none is newer than the last one listed (plus git's five commits of slop against clock skew), and
 * drops anything marked uninteresting by then. "unknown" past `limit` commits read or when one is
 * missing.
 */
export function commitsBetween(store: ObjectStore, from: string, notFrom: readonly string[], limit = 1000): string[] | "unknown" {
  const SLOP = 5;
  const states = new Map<string, WalkState>();
  let loads = 0;
  let interestingQueued = 0;
  const queue = new DateQueue();

  const state = (oid: string): WalkState => {
    let s = states.get(oid);
    if (!s) states.set(oid, (s = { node: undefined, seen: false, added: false, uninteresting: false, queued: false }));
    return s;
  };
  const load = (s: WalkState, oid: string): Node | undefined => {
    if (!s.node) {
      if (++loads > limit) return undefined;
      s.node = loadCommit(store, oid);
    }
    return s.node;
  };
  const markUninteresting = (s: WalkState): void => {
    if (s.uninteresting) return;
    s.uninteresting = true;
    if (s.queued) interestingQueued--;
  };
  const enqueue = (s: WalkState): void => {
    s.queued = true;
    if (!s.uninteresting) interestingQueued++;
    queue.push(s.node!);
  };
  // git's mark_parents_uninteresting: parents get the mark; those already read pass it further.
  const markParentsUninteresting = (node: Node): void => {
    const pending = [...node.parents].reverse();
    while (pending.length > 0) {
      const s = state(pending.pop()!);
      if (s.uninteresting) continue;
      markUninteresting(s);
      if (s.node) for (let i = s.node.parents.length - 1; i >= 0; i--) pending.push(s.node.parents[i]!);
    }
  };

  // Start: every argument peeled to a commit; a commit named both ways is uninteresting.
  const starts: string[] = [];
  for (const [i, arg] of [from, ...notFrom].entries()) {
    const c = peelToCommit(store, arg);
    if (c === "missing") return "unknown";
    if (c === "other") continue;
    if (i > 0) state(c).uninteresting = true;
    starts.push(c);
  }
  const initial: WalkState[] = [];
  for (const oid of starts) {
    const s = state(oid);
    const node = load(s, oid);
    if (!node) return "unknown";
    if (s.uninteresting) markParentsUninteresting(node);
    if (!s.seen) {
      s.seen = true;
      initial.push(s);
    }
  }
  // A stable sort by date, as git sorts the starting list.
  for (const s of initial.sort((a, b) => b.node!.time - a.node!.time)) enqueue(s);

  const listed: Node[] = [];
  let lastDate = Number.POSITIVE_INFINITY;
  let slop = SLOP;
  while (queue.size > 0) {
    const node = queue.pop()!;
    const s = state(node.oid);
    s.queued = false;
    if (!s.uninteresting) interestingQueued--;
    // git's process_parents: read the parents, pass the mark down, queue the new ones.
    if (!s.added) {
      s.added = true;
      for (const p of node.parents) {
        const ps = state(p);
        if (s.uninteresting) markUninteresting(ps);
        const pn = load(ps, p);
        if (!pn) return "unknown";
        if (s.uninteresting) markParentsUninteresting(pn);
        if (!ps.seen) {
          ps.seen = true;
          enqueue(ps);
        }
      }
    }
    if (s.uninteresting) {
      markParentsUninteresting(node);
      // git's still_interesting: go on while something interesting is queued or the queue still
      // holds commits newer than the last one listed; then only `SLOP` more.
      const head = queue.peek();
      if (!head) break;
      if (lastDate <= head.time || interestingQueued > 0) slop = SLOP;
      else if (--slop === 0) break;
      continue;
    }
    lastDate = node.time;
    listed.push(node);
  }
  return listed.filter((n) => !state(n.oid).uninteresting).map((n) => n.oid);
}

// What every git file reader here shares: the object id formats, and a bounded read of one file
// that a hostile repository cannot turn into an endless or blocking one. Small on purpose: the
// refs and the index are read after every command that touched a repository, the object store
// only when history is judged.

export type ObjectFormat = "sha1" | "sha256";

export function hashLength(format: ObjectFormat): number {
  return format === "sha256" ? 32 : 20;
}

const HEX40 = /^[0-9a-f]{40}$/;
const HEX64 = /^[0-9a-f]{64}$/;

export function isOid(value: string, format: ObjectFormat): boolean {
  return (format === "sha256" ? HEX64 : HEX40).test(value);
}

// The one bounded, non-blocking reader of a staged path lives beside the judge (../stage-read.ts).
export { readFileBounded } from "../stage-read.ts";

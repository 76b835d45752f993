// Command shapes that grow with their size, for the scaling table of the decision benchmark and
// the speed tests: each builds a command of about `bytes` bytes (at most the 64 KB cap) by
// repeating one unit. The judge's work must grow linearly with each, and stop at its bound.

export type Shape = (bytes: number) => string;

/** Units joined by `sep`, as many as fit in `bytes` (the command stays below it). */
export function fill(unit: (i: number) => string, sep: string, bytes: number, head = "", tail = ""): string {
  const parts: string[] = [];
  let len = head.length + tail.length;
  for (let i = 0; ; i++) {
    const u = unit(i);
    if (len + u.length + sep.length > bytes - 16) break;
    parts.push(u);
    len += u.length + sep.length;
  }
  return head + parts.join(sep) + tail;
}

export const SHAPES: Readonly<Record<string, Shape>> = {
  /** `cd d0 && ls x0 && cd d1 && ...`: every cd in one and-or list. */
  "cd && chain": (b) => fill((i) => `cd d${i % 10} && ls x${i}`, " && ", b),
  /** `cd d0; cd d1; ...`: each cd may fail, so the possible directories multiply. */
  "cd ; list": (b) => fill((i) => `cd d${i % 10}`, "; ", b),
  /** `cd src && make && cd .. && ...`: in and back out, the common agent pattern. */
  "cd in and out": (b) => fill((i) => `cd src && ls f${i} && cd ..`, " && ", b),
  pipeline: (b) => fill((i) => `grep a${i}`, " | ", b),
  redirections: (b) => fill((i) => `> out${i}.txt`, " ", b, "echo hi "),
  "nested $( )": (b) => {
    const depth = Math.max(1, Math.floor((b - 8) / 10));
    return `echo ${"$(echo ".repeat(depth)}x${")".repeat(depth)}`;
  },
  globs: (b) => fill((i) => `src/*${i}.ts`, " ", b, "ls "),
  "rm globs": (b) => fill((i) => `build/*${i}.o`, " ", b, "rm -f "),
  "here-doc": (b) => fill((i) => `line ${i} of text`, "\n", b, "cat > out.txt <<'EOF'\n", "\nEOF"),
  "here-doc into sh": (b) => fill((i) => `cp src/a${i}.ts build/`, "\n", b, "sh <<'EOF'\n", "\nEOF"),
  "file commands": (b) => fill((i) => `cp src/a${i}.ts build/b${i}.ts`, "; ", b),
  "; list": (b) => fill((i) => `echo ${i}`, "; ", b),
  /** One nested script: the whole list is read again as the argument of `bash -c`. */
  "bash -c script": (b) => fill((i) => `touch build/f${i}`, "; ", b, "bash -c '", "'"),
};

export const SCALING_SIZES_KB: readonly number[] = [1, 4, 16, 64];

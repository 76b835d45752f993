// The seccomp filter handed to bubblewrap (`--seccomp FD`): a classic-BPF program, generated here
// because Node has no seccomp API and an in-process filter would only cover one thread.
//
// What it blocks, and why:
// - socket(AF_UNIX, ...): a read-only bind does not stop connect() on a host unix socket
//   (docker.sock, the session bus, the agent's own IPC). socketpair() stays allowed, so Node's
//   fork() IPC and Python multiprocessing keep working.
// - io_uring: its operations bypass the syscall filter above.
// - the kernel keyring (add_key, request_key, keyctl): keyrings are not namespaced by the mount or
//   pid namespace, and a sandbox mapped to the caller's uid could read the caller's keys.
// - every syscall of a foreign ABI (i386 on x86_64, x32, AArch32): the numbers above would not
//   apply to them, so the whole process is killed instead.

/** Architectures bwrap may run on with this program; anything else has no program (fail closed). */
export type SeccompArch = "x64" | "arm64";

interface ArchTable {
  /** AUDIT_ARCH_* value the kernel reports in seccomp_data.arch. */
  readonly audit: number;
  /** x86_64 also accepts x32 syscalls (nr | 0x40000000) under the same audit arch. */
  readonly x32Bit: boolean;
  readonly socket: number;
  readonly denied: Readonly<Record<string, number>>;
}

const TABLES: Readonly<Record<SeccompArch, ArchTable>> = {
  x64: {
    audit: 0xc000003e,
    x32Bit: true,
    socket: 41,
    denied: { io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, add_key: 248, request_key: 249, keyctl: 250 },
  },
  arm64: {
    audit: 0xc00000b7,
    x32Bit: false,
    socket: 198,
    denied: { io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427, add_key: 217, request_key: 218, keyctl: 219 },
  },
};

const AF_UNIX = 1;
const EPERM = 1;

// Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const RET_KILL_PROCESS = 0x80000000;

// Offsets in struct seccomp_data: nr, arch, instruction_pointer, args[6]. args[0]'s low word is
// at 16 on little-endian machines, which both supported architectures are.
const OFF_NR = 0;
const OFF_ARCH = 4;
const OFF_ARG0_LO = 16;

type Label = "allow" | "eperm" | "kill" | "socket";

/** One instruction; jumps name a label and are resolved to forward offsets by `assemble`. */
type Insn =
  | { readonly op: "ld"; readonly k: number }
  | { readonly op: "jeq" | "jge"; readonly k: number; readonly yes: Label | null; readonly no: Label | null }
  | { readonly op: "ret"; readonly k: number }
  | { readonly op: "label"; readonly name: Label };

function program(t: ArchTable): Insn[] {
  const p: Insn[] = [
    { op: "ld", k: OFF_ARCH },
    { op: "jeq", k: t.audit, yes: null, no: "kill" },
    { op: "ld", k: OFF_NR },
  ];
  if (t.x32Bit) p.push({ op: "jge", k: 0x40000000, yes: "kill", no: null });
  for (const nr of Object.values(t.denied)) p.push({ op: "jeq", k: nr, yes: "eperm", no: null });
  p.push({ op: "jeq", k: t.socket, yes: "socket", no: "allow" });
  p.push({ op: "label", name: "socket" }, { op: "ld", k: OFF_ARG0_LO }, { op: "jeq", k: AF_UNIX, yes: "eperm", no: "allow" });
  p.push({ op: "label", name: "allow" }, { op: "ret", k: RET_ALLOW });
  p.push({ op: "label", name: "eperm" }, { op: "ret", k: RET_ERRNO | EPERM });
  p.push({ op: "label", name: "kill" }, { op: "ret", k: RET_KILL_PROCESS });
  return p;
}

function assemble(insns: readonly Insn[]): Buffer {
  const real = insns.filter((i) => i.op !== "label");
  const at = new Map<Label, number>();
  let n = 0;
  for (const i of insns) {
    if (i.op === "label") at.set(i.name, n);
    else n++;
  }
  const buf = Buffer.alloc(real.length * 8);
  real.forEach((i, idx) => {
    const o = idx * 8;
    const jump = (l: Label | null): number => {
      if (l === null) return 0;
      const off = at.get(l)! - idx - 1;
      if (off < 0 || off > 255) throw new Error(`seccomp: jump to ${l} out of range`);
      return off;
    };
    switch (i.op) {
      case "ld":
        buf.writeUInt16LE(LD_W_ABS, o);
        buf.writeUInt32LE(i.k >>> 0, o + 4);
        break;
      case "jeq":
      case "jge":
        buf.writeUInt16LE(i.op === "jeq" ? JEQ_K : JGE_K, o);
        buf[o + 2] = jump(i.yes);
        buf[o + 3] = jump(i.no);
        buf.writeUInt32LE(i.k >>> 0, o + 4);
        break;
      case "ret":
        buf.writeUInt16LE(RET_K, o);
        buf.writeUInt32LE(i.k >>> 0, o + 4);
        break;
    }
  });
  return buf;
}

/** Node's `process.arch` to the program's architecture, or undefined when there is none. */
export function seccompArch(arch: string = process.arch): SeccompArch | undefined {
  return arch === "x64" || arch === "arm64" ? arch : undefined;
}

const cache = new Map<SeccompArch, Buffer>();

/** The BPF program for `arch`, as the bytes `bwrap --seccomp` reads. */
export function seccompProgram(arch: SeccompArch): Buffer {
  let p = cache.get(arch);
  if (!p) {
    p = assemble(program(TABLES[arch]));
    cache.set(arch, p);
  }
  return p;
}

/** The syscalls answered with EPERM on `arch` (besides AF_UNIX sockets), for doctor and tests. */
export function deniedSyscalls(arch: SeccompArch): readonly string[] {
  return Object.keys(TABLES[arch].denied);
}

/** A decoded instruction, for tests that interpret the program. */
export interface BpfInsn {
  readonly code: number;
  readonly jt: number;
  readonly jf: number;
  readonly k: number;
}

export function decodeProgram(buf: Buffer): BpfInsn[] {
  const out: BpfInsn[] = [];
  for (let o = 0; o < buf.length; o += 8) out.push({ code: buf.readUInt16LE(o), jt: buf[o + 2]!, jf: buf[o + 3]!, k: buf.readUInt32LE(o + 4) });
  return out;
}

/** Run the program on one syscall the way the kernel would (only the opcodes it uses). */
export function interpret(buf: Buffer, data: { readonly arch: number; readonly nr: number; readonly arg0: number }): number {
  const prog = decodeProgram(buf);
  let acc = 0;
  for (let pc = 0; pc < prog.length; pc++) {
    const i = prog[pc]!;
    switch (i.code) {
      case LD_W_ABS:
        acc = i.k === OFF_ARCH ? data.arch : i.k === OFF_NR ? data.nr : i.k === OFF_ARG0_LO ? data.arg0 : 0;
        break;
      case JEQ_K:
        pc += acc >>> 0 === i.k ? i.jt : i.jf;
        break;
      case JGE_K:
        pc += acc >>> 0 >= i.k ? i.jt : i.jf;
        break;
      case RET_K:
        return i.k;
      default:
        throw new Error(`unknown opcode ${i.code}`);
    }
  }
  throw new Error("program fell off the end");
}

export const SECCOMP_RESULTS = { allow: RET_ALLOW, eperm: RET_ERRNO | EPERM, kill: RET_KILL_PROCESS } as const;
export const AUDIT_ARCH: Readonly<Record<SeccompArch, number>> = { x64: TABLES.x64.audit, arm64: TABLES.arm64.audit };

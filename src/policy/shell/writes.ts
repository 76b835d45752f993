// Judging a write (creating, changing or removing) of a path: where it lands decides its class.
// Also what writes besides a command's operands: a redirection to a file, an output option, a
// directory unpacked, cloned or mounted into.

import { basename } from "node:path";
import commandData from "../data/commands.json" with { type: "json" };
import pathData from "../data/paths.json" with { type: "json" };
import { classifyWrite, holdsAny, isWithin, memo, protectedComponent, type StatSource } from "../places.ts";
import type { ShellEnv } from "./env.ts";
import { finding, strictest, type Finding } from "./finding.ts";
import { optionValues, type Analyzer, type Invocation } from "./invocation.ts";
import { expandGlob, globToRegExp, locate, type Located, noteJudged, noteNamed } from "./locate.ts";
import type { Arg, Redir } from "./parse.ts";
import { spend, WRITE_STEPS, type ScriptState } from "./script-state.ts";
import { OUTPUT_OPTIONS } from "./table.ts";

const WRITE_OPS = new Set([">", ">>", ">|", "&>", "&>>", "<>"]);

/** Whether a redirection writes a file (`>&` only with a file name: `>&2`, `>&-` move descriptors). */
export function redirectWrites(r: Redir): boolean {
  if (r.heredoc || !r.target) return false;
  return WRITE_OPS.has(r.op) || (r.op === ">&" && r.target.value !== null && !/^\d+-?$|^-$/.test(r.target.value));
}

/** Text that names auto mode's own files or the settings that load it (commands.json shared.inlineCodeSelfDisabling). */
const SELF_NAMES = commandData.shared.inlineCodeSelfDisabling.names.map((p) => new RegExp(p));

/** The finding for writing (creating, changing or removing) a path argument. */
export function judgeWrite(env: ShellEnv, state: ScriptState, arg: Arg, what: string): Finding {
  if (arg.value === null) {
    // `> "$(dirname ~/.pi/agent/x)/settings.json"`: where it lands is unknown, what it names is not.
    if (SELF_NAMES.some((r) => r.test(arg.text)))
      return finding("self-protection", `${what} ${arg.text}, a path only known at run time that names auto mode's own files or the settings that load it`);
    return finding("outside-writable-roots", `${what} a path only known at run time (${arg.text})`);
  }
  const places = arg.glob ? expandGlob(state, arg.value) : locate(state, arg.value);
  if (state.judged) {
    noteJudged(state, places, "write");
    if (arg.glob) noteNamed(state, arg.value, "write");
  }
  if (!places) {
    // `cd "$(dirname "$F")" && echo {} > settings.json`: from an unknown directory, the name decides.
    const name = basename(arg.value);
    if (!arg.glob && env.places.selfProtected.some((s) => basename(s) === name))
      return finding(
        "self-protection",
        `${what} ${arg.value} relative to a directory only known at run time, the name of auto mode's own files or of the settings that load it`,
      );
    return finding("outside-writable-roots", `${what} ${arg.value} relative to an unknown directory`);
  }
  spend(state, WRITE_STEPS * places.length, "judging writes");
  if (places.some((p) => isBuildDefinition(basename(p.lexical)) || isBuildDefinition(basename(p.real)))) state.codeWrites.push(arg.value);
  return strictest(places.map((p) => writeFinding(env, p, arg.value!, what, state.facts))) ?? finding("read-only", `${what} nothing`);
}

const BUILD_DEFINITIONS = pathData.buildDefinitionFiles.map((p) => globToRegExp(p.toLowerCase()));
/** A file name a build or test run executes as code (paths.json buildDefinitionFiles). */
export const isBuildDefinition = memo((name: string) => {
  const lower = name.toLowerCase();
  return BUILD_DEFINITIONS.some((r) => r.test(lower));
});

export function writeFinding(env: ShellEnv, p: Located, shown: string, what: string, facts?: StatSource): Finding {
  const target = classifyWrite(env.places, p.lexical, p.real, facts);
  switch (target.kind) {
    case "self":
      return finding("self-protection", `${what} ${shown}, which holds auto mode's own configuration or state`);
    case "raw-device":
      return finding("hard-deny", `${what} the raw device ${shown}`);
    case "harmless-device":
      return finding("read-only", `${what} ${shown}`);
    case "protected":
      return finding("protected-path", `${what} ${shown}, under the protected ${target.entry}`);
    case "persistence":
      return finding("persistence", `${what} ${shown}, a location that runs code or holds configuration later`);
    case "inside":
      return finding("workspace-write", `${what} ${shown} inside the ${target.root === "tmp" ? "temporary root" : "workspace"}`);
    case "hardlinked":
      return finding("outside-writable-roots", `${what} ${shown}, a file with other hard links that may lie outside the workspace`);
    case "outside":
      return finding("outside-writable-roots", `${what} ${shown}, outside the writable roots`);
  }
}

/**
 * Auto mode's own files, or the settings that load it, at or below a path: replacing, moving or
 * removing the path takes them with it. The workspace as a whole holds the project's settings, but
 * unpacking into it or copying a tree over it is judged as workspace work (each file it makes is
 * judged where it lands, by the sandbox's effects or as a write), so a path holding the whole
 * workspace does not count what lies inside it.
 */
export function heldSelf(env: ShellEnv, p: Located): string | undefined {
  return heldSelves(env, p)[0];
}

export function heldSelves(env: ShellEnv, p: Located): string[] {
  const { workspace, workspaceLexical } = env.places;
  // Most paths hold none: the list's index says so without a comparison per entry.
  if (!holdsAny(env.places.selfProtected, p.real) && (p.lexical === p.real || !holdsAny(env.places.selfProtected, p.lexical))) return [];
  const holdsWorkspace = isWithin(p.real, workspace) || isWithin(p.lexical, workspaceLexical);
  return env.places.selfProtected.filter((s) => (isWithin(p.real, s) || isWithin(p.lexical, s)) && !(holdsWorkspace && isWithin(workspace, s)));
}

/** True when every candidate location of a static path lies inside the workspace. */
export function insideWorkspace(env: ShellEnv, located: readonly Located[]): boolean {
  return located.every((p) => isWithin(env.places.workspace, p.real));
}

export function isProtectedInWorkspace(env: ShellEnv, p: Located): boolean {
  return isWithin(env.places.workspace, p.real) && protectedComponent(p.real.slice(env.places.workspace.length + 1)) !== undefined;
}

/**
 * Writing anywhere below a directory (unpacking an archive into it, cloning into it, mounting it
 * into a container): denied when auto mode's own files lie below it, judged as a write otherwise.
 */
export function judgeDirWrite(an: Analyzer, dir: Arg, verb: string): Finding {
  const own = dir.value === null ? undefined : (locate(an.state, dir.value) ?? []).map((p) => heldSelf(an.env, p)).find((o) => o !== undefined);
  if (own) return finding("self-protection", `${verb} ${dir.value}, which holds ${own}, auto mode's own configuration or state or the settings that load it`);
  return judgeWrite(an.env, an.state, dir, verb);
}

/** Files a read or build tool writes through an output option (`sort -o`, `gcc -o`). */
export function outputFindings(inv: Invocation, an: Analyzer): Finding[] {
  const spec = OUTPUT_OPTIONS.get(inv.name);
  if (!spec) return [];
  return optionValues(inv.args, spec.short, spec.long)
    .filter((o) => o.value !== "-" && o.value !== "/dev/stdout")
    .map((o) => judgeWrite(an.env, an.state, o, `${inv.name} writes`));
}

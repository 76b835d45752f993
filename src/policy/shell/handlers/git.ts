// git: reads, local history work (runs outside the sandbox, whose .git is read-only),
// network operations, and the few subcommands that destroy work or weaken the repository.

import { isWithin } from "../../places.ts";
import { basename, dirname, join } from "node:path";
import { locate, markDownloaded } from "../locate.ts";
import { judgeDirWrite, judgeWrite, writeFinding } from "../writes.ts";
import { finding, type Finding } from "../finding.ts";
import { hasFlag, operands, optionValues, staticArg, type Analyzer, type Handler, type Invocation } from "../invocation.ts";
import type { Arg } from "../parse.ts";
import { GIT_SAFE_CONFIG_KEYS, PROTECTED_BRANCHES, reasonOf, SUBCOMMANDS } from "../table.ts";
import { isRegenerableTarget } from "./operands.ts";

const CLONE_VALUE_OPTIONS = [
  "-b",
  "--branch",
  "-o",
  "--origin",
  "--depth",
  "-c",
  "--config",
  "--reference",
  "--template",
  "-u",
  "--upload-pack",
  "--separate-git-dir",
  "--filter",
  "-j",
  "--jobs",
  "--shallow-since",
  "--shallow-exclude",
];
/** Subcommands that run repository hooks (commit, merge, checkout and friends). */
const HOOK_RUNNING: ReadonlySet<string> = new Set([
  "commit",
  "merge",
  "rebase",
  "am",
  "cherry-pick",
  "revert",
  "checkout",
  "switch",
  "bisect",
  "worktree",
  "gc",
  "pull",
  "push",
]);

const WORKTREE_WRITING: ReadonlySet<string> = new Set(["checkout", "restore", "rm", "mv", "stash", "clean", "reset", "checkout-index"]);

/** The names of the path components of auto mode's own files and of the settings that load them. */
const selfNamesCache = new WeakMap<readonly string[], ReadonlySet<string>>();
function selfNames(an: Analyzer): ReadonlySet<string> {
  const list = an.env.places.selfProtected;
  let names = selfNamesCache.get(list);
  if (!names) selfNamesCache.set(list, (names = new Set(list.flatMap((s) => s.split("/").slice(-3)).filter((n) => n !== ""))));
  return names;
}

const GLOBAL_VALUE_OPTIONS = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--super-prefix", "--config-env"]);

function configKeyFinding(key: string, scope: string): Finding {
  return GIT_SAFE_CONFIG_KEYS.has(key.toLowerCase())
    ? finding("git-local", `git sets ${key}${scope}`)
    : finding("git-config", `git sets ${key}${scope}, a setting that can run code or change where data goes`);
}

/** Branch names a push refspec would update on the remote. */
function pushedBranches(refspec: string): string[] {
  const spec = refspec.replace(/^\+/, "");
  const dest = spec.includes(":") ? spec.slice(spec.indexOf(":") + 1) : spec;
  return [dest.replace(/^refs\/heads\//, "")];
}

function push(args: readonly Arg[], an: Analyzer): Finding {
  const ops = operands(args, ["--repo", "--receive-pack", "--exec", "-o", "--push-option", "--signed"]);
  const refspecs = ops.slice(1);
  const forceFlag =
    hasFlag(args, "f", ["--force", "--force-with-lease", "--force-if-includes", "--mirror"]) || args.some((a) => a.value?.startsWith("--force-with-lease"));
  const plusRefs = refspecs.filter((r) => r.value?.startsWith("+"));
  if (refspecs.some((r) => r.value === null) && (forceFlag || plusRefs.length > 0))
    return finding("force-push", "git force-pushes a ref only known at run time");
  const forced = forceFlag ? refspecs : plusRefs;
  const targets = forced.flatMap((r) => pushedBranches(r.value ?? ""));
  if ((forceFlag || plusRefs.length > 0) && refspecs.length === 0 && an.env.currentBranch) targets.push(an.env.currentBranch);
  const hit = targets.find(
    (b) => PROTECTED_BRANCHES.has(b) || (b === "HEAD" && an.env.currentBranch !== undefined && PROTECTED_BRANCHES.has(an.env.currentBranch)),
  );
  if (hit) return finding("hard-deny", `git force-pushes to the protected branch ${hit === "HEAD" ? an.env.currentBranch : hit}`);
  if (forceFlag || plusRefs.length > 0) return finding("force-push", "git force-push rewrites shared history");
  const deleting = hasFlag(args, "d", ["--delete"]);
  if (deleting || hasFlag(args, "", ["--prune"]) || refspecs.some((r) => r.value?.startsWith(":"))) {
    // Deleting a protected branch on the remote loses it as surely as force-pushing over it.
    const deleted = refspecs.flatMap((r) => (r.value === null ? [] : deleting ? [r.value] : r.value.startsWith(":") ? pushedBranches(r.value) : []));
    const gone = deleted.find((b) => PROTECTED_BRANCHES.has(b));
    if (gone) return finding("hard-deny", `git push deletes the protected branch ${gone} on the remote`);
    return finding("destructive", "git push deletes remote refs");
  }
  return finding("network", "git push sends commits to a remote");
}

function config(args: readonly Arg[]): Finding {
  const scopeFlags = ["--global", "--system", "--file", "-f", "--blob"];
  const scope = args.find((a) => a.value !== null && scopeFlags.includes(a.value.split("=")[0]!))?.value;
  const reading = args.some((a) =>
    ["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--show-origin", "--show-scope", "--name-only", "get", "list"].includes(
      a.value ?? "",
    ),
  );
  const ops = operands(args, ["--file", "-f", "--blob", "--type", "--default", "--comment"]).filter(
    (a) => !["get", "set", "unset", "list"].includes(a.value ?? ""),
  );
  if (reading || ops.length === 1) return finding("read-only", "git reads its configuration");
  if (scope) return finding("git-config", `git changes ${scope === "--global" || scope === "--system" ? "the user's global" : "another"} configuration`);
  const key = ops[0];
  if (!key || key.value === null) return finding("git-config", "git changes a configuration key only known at run time");
  return configKeyFinding(key.value, "");
}

function checkout(args: readonly Arg[], an: Analyzer): Finding {
  const dd = args.findIndex((a) => a.value === "--");
  if (dd >= 0 && dd < args.length - 1) return finding("destructive", "git checkout -- <paths> discards uncommitted changes");
  if (hasFlag(args, "f", ["--force", "--theirs", "--ours", "--patch"]) || args.some((a) => a.value === "."))
    return finding("destructive", "git checkout overwrites uncommitted changes");
  if (hasFlag(args, "bB", ["--orphan", "--detach"])) return finding("git-local", "git checkout switches branches");
  // `git checkout <path>` discards changes to that path; a name that exists as a file is a path.
  for (const a of operands(args, ["-b", "-B", "--orphan", "--conflict"])) {
    if (a.value === null) return finding("destructive", "git checkout of a target only known at run time");
    if ((locate(an.state, a.value) ?? []).some((p) => p.exists)) return finding("destructive", `git checkout ${a.value} discards changes to that path`);
  }
  return finding("git-local", "git checkout switches branches");
}

const INIT_VALUE_OPTIONS = ["--template", "--separate-git-dir", "-b", "--initial-branch", "--object-format", "--ref-format"];

/**
 * Paths a subcommand writes besides the repository: an archive, patches, a new worktree or
 * repository, checked-out copies, `--output` of the diff family. Local git work runs outside the
 * sandbox, so each is judged like any other write.
 */
function gitOutputs(sub: string, args: readonly Arg[]): Arg[] {
  const out = optionValues(args, [], ["--output"]);
  if (sub === "archive") out.push(...optionValues(args, ["-o"], []));
  if (sub === "format-patch") out.push(...optionValues(args, ["-o"], ["--output-directory"]));
  if (sub === "checkout-index") out.push(...optionValues(args, [], ["--prefix"]));
  if (sub === "init") out.push(...operands(args, INIT_VALUE_OPTIONS).slice(0, 1), ...optionValues(args, [], ["--separate-git-dir"]));
  if (sub === "worktree" && args[0]?.value === "add") out.push(...operands(args.slice(1), ["-b", "-B", "--reason"]).slice(0, 1));
  return out;
}

function subcommand(sub: string, args: readonly Arg[], an: Analyzer, inv: Invocation): Finding[] {
  const has = (short: string, long: string[] = []) => hasFlag(args, short, long);
  const first = args[0]?.value;
  switch (sub) {
    case "push":
      return [push(args, an)];
    case "config":
      return [config(args)];
    case "checkout":
      return [checkout(args, an)];
    case "restore":
      return has("W", ["--worktree"]) || !has("S", ["--staged"])
        ? [finding("destructive", "git restore discards uncommitted changes")]
        : [finding("git-local", "git restore --staged unstages files")];
    case "reset":
      return has("", ["--hard", "--merge", "--keep"])
        ? [finding("destructive", "git reset --hard discards commits and uncommitted work")]
        : [finding("git-local", "git reset moves the branch, keeping the work tree")];
    case "clean": {
      if (has("n", ["--dry-run"])) return [finding("read-only", "git clean --dry-run lists files")];
      const paths = operands(args, ["-e", "--exclude"]);
      // Limited to regenerable output, git clean is cleanup; anywhere else it deletes untracked work.
      if (paths.length > 0 && paths.every((p) => isRegenerableTarget(an.env, an, p)))
        return [finding("regenerable-cleanup", "git clean deletes untracked files in regenerable output")];
      return [finding("destructive", "git clean deletes untracked (and ignored) work")];
    }
    case "stash":
      if (first === "drop" || first === "clear") return [finding("destructive", `git stash ${first} deletes stashed work`)];
      if (first === "list" || first === "show") return [finding("read-only", "git lists stashes")];
      return [finding("git-local", "git stash keeps work recoverable")];
    case "branch":
      if (has("D", []) || (has("d", ["--delete"]) && has("f", ["--force"])))
        return [finding("destructive", "git branch -D deletes a branch that may hold unmerged work")];
      if (
        args.length === 0 ||
        (has("alrv", ["--list", "--all", "--remotes", "--show-current", "--contains", "--merged", "--no-merged", "--verbose"]) &&
          !has("mcdMC", ["--move", "--copy", "--delete", "--set-upstream-to", "--unset-upstream"]))
      )
        return [finding("read-only", "git lists branches")];
      return [finding("git-local", "git changes a local branch")];
    case "tag":
      return args.length === 0 || has("ln", ["--list", "--contains", "--points-at", "--merged"])
        ? [finding("read-only", "git lists tags")]
        : [finding("git-local", "git changes a local tag")];
    case "remote":
      if (args.length === 0 || ["-v", "--verbose", "show", "get-url"].includes(first ?? "")) return [finding("read-only", "git lists remotes")];
      if (first === "update" || first === "prune") return [finding("network", `git remote ${first} contacts remotes`)];
      return [finding("git-local", "git changes the remote list")];
    case "reflog":
      return first === "expire" || first === "delete"
        ? [finding("destructive", "git reflog expire drops the history that recovers lost work")]
        : [finding("read-only", "git reads the reflog")];
    case "gc":
      return args.some((a) => /^--prune=(now|all)/.test(a.value ?? ""))
        ? [finding("destructive", "git gc --prune=now deletes unreachable objects immediately")]
        : [finding("git-local", "git packs its objects")];
    case "maintenance":
      // start and register schedule git runs through cron, launchd or systemd timers.
      return first === "start" || first === "register"
        ? [finding("persistence", `git maintenance ${first} schedules recurring git runs`)]
        : [finding("git-local", "git maintains its repository")];
    case "worktree":
      if (first === "list") return [finding("read-only", "git lists worktrees")];
      if (first === "remove" && has("f", ["--force"])) return [finding("destructive", "git worktree remove --force deletes uncommitted work")];
      return [finding("git-local", "git manages worktrees")];
    case "submodule":
      if (first === "foreach") {
        const script = args.slice(1).filter((a) => a.value !== "--recursive" && a.value !== "-q" && a.value !== "--quiet");
        if (script.some((a) => a.value === null)) return [finding("dynamic-command", "git submodule foreach runs a command only known at run time")];
        return an.script(script.map((a) => a.value).join(" "), "git submodule foreach");
      }
      if (first === "status" || first === "summary" || args.length === 0) return [finding("read-only", "git lists submodules")];
      return [finding("network", "git submodule fetches other repositories")];
    case "bisect":
      if (first === "run") return [finding("git-local", "git bisect"), ...an.argv(args.slice(1), inv.source, false)];
      return [finding("git-local", "git bisect")];
    case "rebase": {
      const execs = args.flatMap((a, i) =>
        a.value === "-x" || a.value === "--exec" ? [args[i + 1]] : a.value?.startsWith("--exec=") ? [staticArg(a.value.slice(7))] : [],
      );
      const nested = execs.flatMap((e) =>
        e?.value ? an.script(e.value, "git rebase --exec") : [finding("dynamic-command", "git rebase --exec runs a command only known at run time")],
      );
      return [finding("git-local", "git rebase rewrites local history"), ...nested];
    }
    case "clone": {
      // What a clone brings in is remote code: running it later in this command needs review.
      const [url, dir] = operands(args, CLONE_VALUE_OPTIONS);
      const dest = dir?.value ?? (url?.value ? basename(url.value.replace(/\/+$/, "")).replace(/\.git$/, "") : null);
      markDownloaded(an.state, dest);
      const into = dest === null ? [] : [judgeDirWrite(an, dir ?? staticArg(dest), "git clone writes into")];
      return [finding("network", "git clone fetches another repository"), ...into];
    }
    case "grep": {
      // `git grep -OCMD` opens the matching files with CMD (only attached: `-O x` greps for x).
      const pagers = args.flatMap((a) => {
        const m = a.value === null ? null : /^(?:-O|--open-files-in-pager=?)(.*)$/s.exec(a.value);
        return m && m[1] !== "" ? [{ ...a, value: m[1]! }] : [];
      });
      if (pagers.length === 0) return [finding("read-only", "git grep")];
      return pagers.flatMap((p) =>
        p.value === null ? [finding("dynamic-command", "git grep -O runs a pager only known at run time")] : an.script(p.value, "git grep -O"),
      );
    }
    case "archive":
    case "ls-remote":
      if (sub === "archive" && !args.some((a) => a.value === null || /^--remote(=|$)/.test(a.value))) return [finding("git-local", "git archive")];
      return [finding("network", `git ${sub} contacts a remote`)];
    case "rm":
      // Without --force git refuses to remove files with uncommitted changes; with it they are lost.
      return has("f", ["--force"]) && !has("", ["--cached"])
        ? [finding("destructive", "git rm --force discards uncommitted changes of the removed files")]
        : [finding("git-local", "git rm removes tracked files (recoverable from history)")];
    default: {
      const table = SUBCOMMANDS.get("git")!;
      const cls = table.byName.get(sub) ?? table.fallback;
      const reason = reasonOf("git", cls);
      return [finding(reason, cls === "contain" && !table.byName.has(sub) ? `git ${sub} is not a known subcommand (an alias may run anything)` : `git ${sub}`)];
    }
  }
}

/**
 * A repository below the workspace root (perhaps created by an earlier sandboxed command) has
 * hooks and config the gate never inspected: its git commands are not trusted outside the sandbox.
 */
function inNestedRepository(an: Analyzer, workspace: string, dir: string): boolean {
  for (let d = dir; d !== workspace && isWithin(workspace, d); d = dirname(d)) {
    if (an.state.facts.target(join(d, ".git")) !== undefined) return true;
  }
  return false;
}

export const git: Handler = (inv, an) => {
  const out: Finding[] = [];
  let i = 0;
  let elsewhere = false;
  for (; i < inv.args.length; i++) {
    const a = inv.args[i]!;
    const v = a.value;
    if (v === null) return [finding("dynamic-command", "git with an option or subcommand only known at run time")];
    if (!v.startsWith("-")) break;
    const name = v.split("=")[0]!;
    const value = v.includes("=") && name !== "-c" ? staticArg(v.slice(name.length + 1)) : GLOBAL_VALUE_OPTIONS.has(v) ? inv.args[++i] : undefined;
    if (name === "-c") {
      const kv = v === "-c" ? value?.value : v.slice(2);
      if (kv === null || kv === undefined) return [finding("git-config", "git -c with a setting only known at run time")];
      out.push(configKeyFinding(kv.split("=")[0]!, " for one command"));
    } else if (name === "-C" || name === "--git-dir" || name === "--work-tree") {
      const located = value?.value ? locate(an.state, value.value) : null;
      if (!located?.every((p) => isWithin(an.env.places.workspace, p.real) && (name !== "-C" || !inNestedRepository(an, an.env.places.workspace, p.real))))
        elsewhere = true;
      // git writes where it works (index, objects, init): inside auto mode's own files that is self-disabling.
      for (const p of located ?? []) {
        const w = writeFinding(an.env, p, value!.value!, `git ${name} works in`, an.state.facts);
        if (w.reason === "self-protection") out.push(w);
      }
    } else if (name === "--exec-path" && value) {
      out.push(finding("git-config", "git --exec-path runs git helpers from another directory"));
    }
  }
  const sub = inv.args[i]?.value;
  if (sub === undefined) return [finding("read-only", "git prints its usage"), ...out];
  if (sub === null) return [finding("dynamic-command", "git subcommand only known at run time")];
  const found = subcommand(sub, inv.args.slice(i + 1), an, inv);
  // Subcommands that rewrite or remove the work tree's files named on the line: auto mode's own
  // files or the settings that load it among them is self-disabling.
  if (WORKTREE_WRITING.has(sub))
    for (const o of operands(inv.args.slice(i + 1), ["-m", "--message", "-s", "--source", "-b", "-B", "--conflict", "--pathspec-from-file"])) {
      // Only a path that shares a name with those files can be one of them (git does not follow links).
      if (o.value === null || !o.value.split("/").some((part) => selfNames(an).has(part))) continue;
      const w = judgeWrite(an.env, an.state, o, `git ${sub} rewrites`);
      if (w.reason === "self-protection") found.push(w);
    }
  for (const o of gitOutputs(sub, inv.args.slice(i + 1))) {
    const w = judgeWrite(an.env, an.state, o, `git ${sub} writes`);
    if (w.cls !== "workspace-write") found.push(w);
  }
  // Local git writes are only trusted outside the sandbox for the workspace repository, and
  // only while its hooks cannot be rewritten by the agent without review.
  const outsideCwd = an.state.cwds.some((c) => c === null || !isWithin(an.env.places.workspace, c));
  const nested = an.state.cwds.some((c) => c !== null && inNestedRepository(an, an.env.places.workspace, c));
  const demote = elsewhere || outsideCwd || nested || an.env.gitHooksWritable || an.state.facts.target(an.env.places.workspace) === undefined;
  // Even a "read" runs the repository's config: fsmonitor and clean filters on status, textconv
  // and external diff on diff, gpg.program on log. An uninspected repository is contained.
  const foreign = elsewhere || outsideCwd || nested;
  for (const f of found) {
    if (f.cls === "read" && foreign)
      out.push(finding("sandboxed", `${f.detail}, in a repository whose configuration (fsmonitor, filters, textconv) the gate never inspected`));
    else if (f.cls === "git-local" && demote) out.push(finding("sandboxed", `${f.detail}, in a repository or with hooks the gate cannot vouch for`));
    else if (f.cls === "git-local" && an.env.gitHooksActive && HOOK_RUNNING.has(sub))
      // Hooks run outside the sandbox with the commit, and often read workspace files the agent
      // may change (lint-staged in package.json, a pre-commit config): a reviewer judges them.
      out.push(finding("git-hooks", `${f.detail}, which runs this repository's git hooks outside the sandbox`));
    else out.push(f);
  }
  return out;
};

// Language interpreters (python, node, perl, ruby, ...): inline code is read only for hazards no
// sandbox makes harmless; a script or module is code the gate does not read.

import { finding, type Finding } from "../finding.ts";
import { operands, staticArg, type Handler, type HandlerRegistry } from "../invocation.ts";
import { INLINE_CODE_HAZARDS, INLINE_CODE_OPTIONS, INLINE_CODE_SELF_DISABLING, INTERPRETER_HAZARDS, PI_CLI, PYTHON_MODULES, reasonOf } from "../table.ts";
import { judgeWrite } from "../writes.ts";
import { packageManager } from "./packages.ts";
import { heredocBody, runsDownloaded } from "./shells.ts";

export const interpreter: Handler = (inv, an) => {
  const args = inv.args;
  const first = args[0]?.value;
  if (args.length > 0 && args.every((a) => ["--version", "-V", "-v", "--help", "-h", "-version"].includes(a.value ?? "")))
    return [finding("read-only", `${inv.name} prints its version`)];
  if (first === null) return [finding("dynamic-command", `${inv.name} with arguments only known at run time`)];
  if ((inv.name === "python" || inv.name.startsWith("python")) && first === "-m") {
    const mod = args[1]?.value ?? null;
    if (mod === null) return [finding("dynamic-command", "python -m with a module only known at run time")];
    if (mod === "pip") return packageManager("pip")({ ...inv, args: args.slice(2) }, an);
    const cls = PYTHON_MODULES.get(mod);
    return [cls ? finding(reasonOf(inv.name, cls), `python -m ${mod}`) : finding("inline-code", `python -m ${mod} runs a module`)];
  }
  if ((inv.name === "node" || inv.name === "nodejs") && args.some((a) => a.value === "--test"))
    return [finding("build-test", "node --test runs the test suite")];
  if ((inv.name === "node" || inv.name === "nodejs") && args.some((a) => a.value === "--check" || a.value === "-c"))
    return [finding("read-only", "node --check only parses")];
  const inline = args.findIndex((a) => a.value !== null && (INLINE_CODE_OPTIONS.has(a.value.split("=")[0]!) || inlineCodeBundle(a.value)));
  if (inline >= 0) {
    const opt = args[inline]!.value!;
    const code = opt.includes("=") ? opt.slice(opt.indexOf("=") + 1) : args[inline + 1]?.value;
    if (code === null) return [finding("dynamic-command", `${inv.name} runs inline code only known at run time`)];
    // `perl -pi -e CODE FILES`, `ruby -i -pe`: the files after the code are rewritten in place.
    const inPlace =
      (inv.name === "perl" || inv.name === "ruby") && args.some((a) => a.value !== null && /^-[a-zA-Z]*i/.test(a.value) && !a.value.startsWith("--"));
    const rewritten = inPlace
      ? operands(args.slice(opt.includes("=") ? inline + 1 : inline + 2)).map((f) => judgeWrite(an.env, an.state, f, `${inv.name} -i rewrites`))
      : [];
    return [finding("inline-code", `${inv.name} runs inline code`), ...codeHazards(inv.name, code), ...rewritten];
  }
  const file = operands(args, ["-W", "-X", "-r", "--require", "--import", "--loader", "-I"]).at(0);
  if (file && file.value !== "-") {
    if (file.value === null) return [finding("remote-code", `${inv.name} runs a program only known at run time (${file.text})`)];
    // Pi's own command line run from its package's files is `pi`.
    if ([...PI_CLI.packageNames].some((p) => file.value!.includes(`${p}/`)))
      return [
        finding("inline-code", `${inv.name} runs the program ${file.value}`),
        ...an.argv([staticArg("pi"), ...args.slice(args.indexOf(file) + 1)], inv.source, inv.pipedInput),
      ];
    if (runsDownloaded(an, file)) return [finding("remote-code", `${inv.name} runs ${file.value}, downloaded by this command`)];
    return [finding("inline-code", `${inv.name} runs the program ${file.value}`)];
  }
  if (inv.pipedInput) return [finding("remote-code", `pipes data into ${inv.name}, which runs it as code`)];
  const body = heredocBody(inv);
  if (body) return [finding("inline-code", `${inv.name} runs code from a here-document`), ...codeHazards(inv.name, body.body)];
  return [finding("inline-code", `${inv.name} runs code from standard input`)];
};

/** Bundled short options that end in an inline-code letter take the code next: `perl -ne`, `node -pe`, `python3 -Bc`. */
function inlineCodeBundle(v: string): boolean {
  return /^-[A-Za-z]{2,}$/.test(v) && INLINE_CODE_OPTIONS.has(`-${v.at(-1)}`);
}

/**
 * Inline code is read only for what no sandbox makes harmless: naming identity secrets, deleting
 * files, or starting other programs (whose command lines the gate cannot see).
 */
function codeHazards(interpreter: string, code: string | null | undefined): Finding[] {
  if (!code) return [];
  // Naming the files that load or configure auto mode and writing, moving or removing files: self-disabling.
  if (INLINE_CODE_SELF_DISABLING.names.some((r) => r.test(code)) && INLINE_CODE_SELF_DISABLING.writes.some((r) => r.test(code)))
    return [finding("self-protection", `${interpreter} inline code writes or removes files and names auto mode's own files or the settings that load it`)];
  const hit = [...INLINE_CODE_HAZARDS, ...(INTERPRETER_HAZARDS.get(interpreter) ?? [])].find((h) => h.re.test(code));
  if (!hit) return [];
  const what = {
    "identity-secret": "names identity secrets",
    destructive: "deletes files",
    "dynamic-command": "starts other programs",
    "protected-path": "names auto mode's own files",
    persistence: "names a file that runs code at login, on a schedule or in git",
  }[hit.reason];
  return [finding(hit.reason, `${interpreter} inline code ${what}`)];
}

/** This family's code handlers, by the name commands.json gives them. */
export const INTERPRETER_HANDLERS: HandlerRegistry = {
  interpreter: () => interpreter,
};

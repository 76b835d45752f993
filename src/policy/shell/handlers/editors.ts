// Editors that run commands: vim's Ex commands given on the command line, emacs's Lisp.

import { finding, type Finding } from "../finding.ts";
import { optionValues, staticArg, type Handler, type HandlerRegistry } from "../invocation.ts";

/** An Ex command that is `:!CMD` (or a `:%!CMD` filter): CMD is a shell command line. */
const EX_SHELL = /^\s*:*\s*[%.$\d,]*\s*!(.*)$/s;

/** Ex commands that run other code: `:w !cmd`, `:r !cmd`, system(), terminals, embedded languages. */
const EX_RUNS_CODE =
  /\b(w|write|r|read|wq|x)\s+!|\bsystem(list)?\s*\(|\bterm(inal)?\b|^\s*:*\s*(py3?|python3?|pyx|lua|perl|ruby|luado|pydo|py3do|rubydo|perldo|call|exe(cute)?|so(urce)?)\b/;

/** emacs: Lisp given with --eval, --load, --funcall or --script can do anything; the gate does not read Lisp. */
const emacs: Handler = (inv) => {
  const code = inv.args.find((a) => a.value === null || /^(--?eval|--?load|-l|--?funcall|-f|--?script|-batch-byte-compile|--?execute|-x)(=|$)/.test(a.value));
  if (code) return [finding("dynamic-command", `${inv.name} runs Lisp code (${code.value ?? code.text})`)];
  return [finding("inline-code", `${inv.name} is an editor that can run commands`)];
};

/** vim, nvim, ex: commands given with -c, --cmd or +CMD run before anything is edited. */
const editor: Handler = (inv, an) => {
  const out: Finding[] = [finding("inline-code", `${inv.name} is an editor that can run commands`)];
  const commands = [
    ...optionValues(inv.args, [], ["-c", "--cmd"]),
    ...inv.args.filter((a) => a.value?.startsWith("+")).map((a) => staticArg(a.value!.slice(1))),
  ];
  for (const c of commands) {
    if (c.value === null) return [...out, finding("dynamic-command", `${inv.name} runs an editor command only known at run time`)];
    const shell = EX_SHELL.exec(c.value);
    if (shell) out.push(...an.script(shell[1]!, `${inv.name} :!`));
    else if (EX_RUNS_CODE.test(c.value)) out.push(finding("dynamic-command", `${inv.name} command ${c.value} runs other code`));
  }
  return out;
};

/** This family's code handlers, by the name commands.json gives them. */
export const EDITOR_HANDLERS: HandlerRegistry = {
  vim: () => editor,
  emacs: () => emacs,
};

// A UI context that records what the extension does with it and opens no real dialog. Tests use it
// to prove that no dialog opens for an action decision (P4) and that the status line tells the truth.

import type { ExtensionUIContext } from "@earendil-works/pi-coding-agent";

export const UI_METHODS = [
  "select",
  "confirm",
  "input",
  "editor",
  "custom",
  "notify",
  "onTerminalInput",
  "setStatus",
  "setWorkingMessage",
  "setWorkingVisible",
  "setWorkingIndicator",
  "setHiddenThinkingLabel",
  "setWidget",
  "setFooter",
  "setHeader",
  "setTitle",
  "pasteToEditor",
  "setEditorText",
  "getEditorText",
  "addAutocompleteProvider",
  "setEditorComponent",
  "getEditorComponent",
  "getAllThemes",
  "getTheme",
  "setTheme",
  "getToolsExpanded",
  "setToolsExpanded",
] as const;

const DIALOGS: ReadonlySet<string> = new Set(["select", "confirm", "input", "editor", "custom"]);

export interface Note {
  readonly text: string;
  readonly level: string;
}

export interface RecordingUi {
  readonly ui: ExtensionUIContext;
  /** Every method called, in order. */
  readonly calls: string[];
  /** Dialogs opened, as "method title". */
  readonly dialogs: string[];
  readonly notes: Note[];
  /** Every text set for a status key, oldest first. */
  statuses(key?: string): string[];
  /** The status text shown now for a key. */
  status(key: string): string | undefined;
  /** Every set of text lines a widget key was given, oldest first (undefined: cleared; a component factory is not text). */
  widgets(key: string): Array<readonly string[] | undefined>;
  /** Every confirm dialog's title and message, oldest first. */
  readonly confirms: Array<{ readonly title: string; readonly message: string }>;
  /** The next note notified from now on (for a command another extension started, which Pi does not await). */
  nextNote(): Promise<Note>;
}

export interface UiAnswers {
  /** What a select dialog answers (undefined: dismissed). */
  readonly select?: (title: string, options: readonly string[]) => string | undefined;
  /** What a confirm dialog answers (default: no). */
  readonly confirm?: (title: string, message: string) => boolean;
}

export function recordingUi(answers: UiAnswers = {}): RecordingUi {
  const calls: string[] = [];
  const dialogs: string[] = [];
  const notes: Note[] = [];
  const history: Array<[string, string | undefined]> = [];
  const widgetHistory: Array<[string, readonly string[] | undefined]> = [];
  const confirms: Array<{ title: string; message: string }> = [];
  const waiting: Array<(n: Note) => void> = [];
  const method =
    (m: (typeof UI_METHODS)[number]) =>
    (...args: unknown[]): unknown => {
      calls.push(m);
      if (m === "notify") {
        const note = { text: String(args[0]), level: String(args[1] ?? "info") };
        notes.push(note);
        for (const w of waiting.splice(0)) w(note);
        return undefined;
      }
      if (m === "setStatus") return void history.push([String(args[0]), args[1] as string | undefined]);
      if (m === "setWidget" && (args[1] === undefined || Array.isArray(args[1])))
        return void widgetHistory.push([String(args[0]), args[1] as string[] | undefined]);
      if (DIALOGS.has(m)) {
        dialogs.push(`${m} ${String(args[0])}`);
        if (m === "select") return Promise.resolve(answers.select?.(String(args[0]), args[1] as string[]));
        if (m === "confirm") {
          confirms.push({ title: String(args[0]), message: String(args[1]) });
          return Promise.resolve(answers.confirm?.(String(args[0]), String(args[1])) ?? false);
        }
        return Promise.resolve(undefined);
      }
      if (m === "onTerminalInput") return () => {};
      if (m === "getAllThemes") return [];
      if (m === "getEditorText") return "";
      if (m === "getToolsExpanded") return false;
      return undefined;
    };
  const ui = Object.fromEntries(UI_METHODS.map((m) => [m, method(m)])) as unknown as ExtensionUIContext;
  return {
    ui,
    calls,
    dialogs,
    notes,
    statuses: (key) => history.filter(([k, t]) => (key === undefined || k === key) && t !== undefined).map(([, t]) => t!),
    status: (key) => [...history].reverse().find(([k]) => k === key)?.[1],
    widgets: (key) => widgetHistory.filter(([k]) => k === key).map(([, lines]) => lines),
    confirms,
    nextNote: () => new Promise<Note>((resolve) => waiting.push(resolve)),
  };
}

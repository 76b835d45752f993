// The footer status: always the true effective state (P16).

import { redact } from "../request/redact.ts";

export const STATUS_KEY = "auto-mode";

export interface StatusSink {
  setStatus(key: string, text: string | undefined): void;
}

export function showStatus(ui: StatusSink, label: string): void {
  ui.setStatus(STATUS_KEY, redact(`auto-mode: ${label}`));
}

// A scripted model's turns for Pi's faux provider: a tool call, or a final text.

import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";

export const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
export const done = (text = "done") => fauxAssistantMessage([fauxText(text)]);

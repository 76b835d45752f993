// Bounded, sorted-key JSON for tool inputs. Only values JSON can carry exactly are supported;
// anything else (cycles, accessors, functions, non-finite numbers, class instances, sparse
// arrays, symbol keys) makes the whole request unsupported, because we could not be sure the
// text we judge is the value the tool will receive.

import { types } from "node:util";

export interface JsonLimits {
  readonly maxDepth: number;
  readonly maxNodes: number;
  readonly maxBytes: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = { maxDepth: 64, maxNodes: 20_000, maxBytes: 1_048_576 };

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type CanonicalJson = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: string };

class Unsupported extends Error {}

/** UTF-8 length; ASCII (the usual case) is counted without a native call. */
function utf8Length(s: string): number {
  return /^[\x00-\x7f]*$/.test(s) ? s.length : Buffer.byteLength(s, "utf8");
}

/**
 * Printable ASCII other than `"` and `\`: JSON writes such a string as it is, in quotes, and its
 * UTF-8 length is its length. JSON.stringify takes several times longer to find that out than
 * this anchored scan (a 100 KB command: ~300 us against ~60 us), so long strings are tested first.
 */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const PLAIN_FROM = 512;

export function canonicalJson(value: unknown, limits: JsonLimits = DEFAULT_JSON_LIMITS): CanonicalJson {
  let nodes = 0;
  let bytes = 0;
  const ancestors = new Set<object>();

  const emit = (s: string): string => {
    bytes += utf8Length(s);
    if (bytes > limits.maxBytes) throw new Unsupported(`input larger than ${limits.maxBytes} bytes`);
    return s;
  };

  const visit = (v: unknown, depth: number): string => {
    nodes += 1;
    if (nodes > limits.maxNodes) throw new Unsupported(`input has more than ${limits.maxNodes} values`);
    if (depth > limits.maxDepth) throw new Unsupported(`input nested deeper than ${limits.maxDepth}`);
    switch (typeof v) {
      case "string":
        if (v.length >= PLAIN_FROM && PLAIN.test(v)) {
          bytes += v.length + 2;
          if (bytes > limits.maxBytes) throw new Unsupported(`input larger than ${limits.maxBytes} bytes`);
          return `"${v}"`;
        }
        return emit(JSON.stringify(v));
      case "boolean":
        return emit(v ? "true" : "false");
      case "number":
        if (!Number.isFinite(v)) throw new Unsupported("non-finite number");
        return emit(JSON.stringify(v));
      case "object":
        break;
      default:
        throw new Unsupported(`unsupported value of type ${typeof v}`);
    }
    if (v === null) return emit("null");
    const obj = v as object;
    // A proxy can show us one value (descriptors) and the tool another (get trap): never judged.
    if (types.isProxy(obj)) throw new Unsupported("proxy object");
    if (ancestors.has(obj)) throw new Unsupported("cyclic value");
    ancestors.add(obj);
    try {
      if (Array.isArray(obj)) return visitArray(obj, depth);
      const proto = Object.getPrototypeOf(obj);
      if (proto !== Object.prototype && proto !== null) throw new Unsupported("non-plain object");
      if (Object.getOwnPropertySymbols(obj).length > 0) throw new Unsupported("symbol-keyed property");
      const names = Object.getOwnPropertyNames(obj);
      if (nodes + names.length > limits.maxNodes) throw new Unsupported(`input has more than ${limits.maxNodes} values`);
      const keys = names.sort();
      let out = emit("{");
      keys.forEach((key, i) => {
        const desc = Object.getOwnPropertyDescriptor(obj, key);
        if (!desc || !("value" in desc)) throw new Unsupported(`accessor property ${JSON.stringify(key)}`);
        if (!desc.enumerable) throw new Unsupported(`non-enumerable property ${JSON.stringify(key)}`);
        out += (i > 0 ? emit(",") : "") + emit(JSON.stringify(key)) + emit(":") + visit(desc.value, depth + 1);
      });
      return out + emit("}");
    } finally {
      ancestors.delete(obj);
    }
  };

  const visitArray = (arr: readonly unknown[], depth: number): string => {
    if (Object.getPrototypeOf(arr) !== Array.prototype) throw new Unsupported("non-plain array");
    const extra = Object.getOwnPropertyNames(arr).filter((k) => k !== "length" && !/^(0|[1-9]\d*)$/.test(k));
    if (extra.length > 0 || Object.getOwnPropertySymbols(arr).length > 0) throw new Unsupported("array with extra properties");
    let out = emit("[");
    for (let i = 0; i < arr.length; i++) {
      const desc = Object.getOwnPropertyDescriptor(arr, String(i));
      if (!desc) throw new Unsupported("sparse array");
      if (!("value" in desc)) throw new Unsupported("accessor element");
      out += (i > 0 ? emit(",") : "") + visit(desc.value, depth + 1);
    }
    return out + emit("]");
  };

  try {
    return { ok: true, text: visit(value, 0) };
  } catch (e) {
    if (e instanceof Unsupported) return { ok: false, reason: e.message };
    // A proxy trap or exotic object threw while we looked at it: unsupported, never allowed.
    return { ok: false, reason: `value could not be inspected: ${e instanceof Error ? e.message : String(e)}` };
  }
}

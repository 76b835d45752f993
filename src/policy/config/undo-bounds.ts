// How much undo history a workspace keeps: the configuration reads these without loading undo itself.

export interface UndoBounds {
  /** Applied commands kept per workspace. */
  readonly maxCommands: number;
  /** Bytes of pre-images kept per workspace. */
  readonly maxBytes: number;
}

export const DEFAULT_UNDO_BOUNDS: UndoBounds = { maxCommands: 20, maxBytes: 512 * 2 ** 20 };

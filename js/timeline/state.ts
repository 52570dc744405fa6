/**
 * The state a view reads and writes, whoever holds it: an anywidget model (synced with a
 * Python widget) or a `LocalModel` (a host without a kernel, e.g. the JupyterLab Traces
 * sidebar over HTTP). Both answer the same small interface, a subset of anywidget's
 * `AnyModel`, so views never know which host they run in.
 */

/** What a view needs of a model: get and set values, save them, listen to changes. */
export interface StateModel<T extends object> {
  get<K extends keyof T>(key: K): T[K];
  set<K extends keyof T>(key: K, value: T[K]): void;
  /** Push the values set since the last call to the model's owner (the kernel, for anywidget). */
  save_changes(): void;
  on(eventName: string, callback: () => void): void;
  off(eventName?: string | null, callback?: (() => void) | null): void;
}

/** Options of a command call: binary buffers to send, a signal that abandons the call. */
export interface InvokeOptions {
  buffers?: DataView[];
  signal?: AbortSignal;
}

/** A request/response call to the data's owner (anywidget's `experimental.invoke` has this shape). */
export type Invoke = <T>(name: string, msg?: unknown, options?: InvokeOptions) => Promise<[T, DataView[]]>;

/**
 * A model held in the page: values in a map, `change:<key>` events when `set` changes one.
 * `save_changes` has no one to tell; `onSave` (if given) hears about it.
 */
export class LocalModel<T extends object> implements StateModel<T> {
  private readonly values: T;
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(
    initial: T,
    private readonly onSave?: (model: LocalModel<T>) => void,
  ) {
    this.values = { ...initial };
  }

  get<K extends keyof T>(key: K): T[K] {
    return this.values[key];
  }

  set<K extends keyof T>(key: K, value: T[K]): void {
    const old = this.values[key];
    this.values[key] = value;
    if (!sameValue(old, value)) this.emit(`change:${String(key)}`);
  }

  save_changes(): void {
    this.onSave?.(this);
  }

  on(eventName: string, callback: () => void): void {
    let set = this.listeners.get(eventName);
    if (!set) {
      set = new Set();
      this.listeners.set(eventName, set);
    }
    set.add(callback);
  }

  off(eventName?: string | null, callback?: (() => void) | null): void {
    if (!eventName) {
      this.listeners.clear();
      return;
    }
    if (!callback) this.listeners.delete(eventName);
    else this.listeners.get(eventName)?.delete(callback);
  }

  private emit(eventName: string): void {
    for (const cb of [...(this.listeners.get(eventName) ?? [])]) cb();
  }
}

/** Equal as JSON values (what a change is for synced traits). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

const EXCEPTION_CODES: Record<string, number> = {
  IndexSizeError: 1, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12,
  InvalidCharacterError: 5, NetworkError: 19, AbortError: 20, TimeoutError: 23, DataCloneError: 25,
  QuotaExceededError: 22,
};

/** The web DOMException: an Error with a `name` such as `AbortError` and its legacy `code`. */
export class DOMException extends Error {
  readonly code: number;

  constructor(message = '', name = 'Error') {
    super(message);
    Object.defineProperty(this, 'name', { value: name, configurable: true, writable: true, enumerable: false });
    this.code = EXCEPTION_CODES[name] ?? 0;
  }
}

/** A minimal web Event: enough for AbortSignal listeners. */
export class Event {
  readonly type: string;
  target: EventTarget | null = null;
  defaultPrevented = false;

  constructor(type: string) {
    this.type = String(type);
  }

  preventDefault(): void {
    this.defaultPrevented = true;
  }
}

type Listener = ((event: Event) => void) | { handleEvent(event: Event): void };

/** A minimal web EventTarget (no capture phase or bubbling: there is no tree in the sandbox). */
export class EventTarget {
  #listeners = new Map<string, { listener: Listener; once: boolean }[]>();

  addEventListener(type: string, listener: Listener | null, options?: boolean | { once?: boolean }): void {
    if (!listener) return;
    const list = this.#listeners.get(type) ?? [];
    if (list.some((l) => l.listener === listener)) return;
    list.push({ listener, once: typeof options === 'object' && options !== null && Boolean(options.once) });
    this.#listeners.set(type, list);
  }

  removeEventListener(type: string, listener: Listener | null): void {
    const list = this.#listeners.get(type);
    if (!list) return;
    this.#listeners.set(type, list.filter((l) => l.listener !== listener));
  }

  dispatchEvent(event: Event): boolean {
    event.target = this;
    const handler = (this as unknown as Record<string, unknown>)[`on${event.type}`];
    if (typeof handler === 'function') handler.call(this, event);
    for (const entry of [...(this.#listeners.get(event.type) ?? [])]) {
      if (entry.once) this.removeEventListener(event.type, entry.listener);
      if (typeof entry.listener === 'function') entry.listener.call(this, event);
      else entry.listener.handleEvent(event);
    }
    return !event.defaultPrevented;
  }
}

/** The web AbortSignal: `aborted`, `reason`, `throwIfAborted()`, the `abort` event. */
export class AbortSignal extends EventTarget {
  #aborted = false;
  #reason: unknown = undefined;
  onabort: ((event: Event) => void) | null = null;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  throwIfAborted(): void {
    if (this.#aborted) throw this.#reason;
  }

  /** @internal Used by AbortController and the static helpers only. */
  static _abort(signal: AbortSignal, reason: unknown): void {
    if (signal.#aborted) return;
    signal.#aborted = true;
    signal.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    signal.dispatchEvent(new Event('abort'));
  }

  static abort(reason?: unknown): AbortSignal {
    const signal = new AbortSignal();
    AbortSignal._abort(signal, reason);
    return signal;
  }

  static timeout(ms: number): AbortSignal {
    const signal = new AbortSignal();
    setTimeout(() => AbortSignal._abort(signal, new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
    return signal;
  }

  static any(signals: Iterable<AbortSignal>): AbortSignal {
    const combined = new AbortSignal();
    for (const s of signals) {
      if (s.aborted) {
        AbortSignal._abort(combined, s.reason);
        return combined;
      }
      s.addEventListener('abort', () => AbortSignal._abort(combined, s.reason), { once: true });
    }
    return combined;
  }
}

/** The web AbortController. */
export class AbortController {
  readonly signal = new AbortSignal();

  abort(reason?: unknown): void {
    AbortSignal._abort(this.signal, reason);
  }
}

const texts = new WeakMap<object, string>();

/**
 * `JSON.stringify(value)` (`null` for undefined), made once per object: for objects that are
 * never changed once serialised, whose text several writers store. An emitted payload is written
 * in its emit's record (`emitRecordJson`) and as the body of each of its deliveries and listener
 * dispatches (`payloadJson`), the same text each time: it is serialised for the first and looked
 * up by the others. Kept as long as the object lives.
 */
export function sharedJsonText(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null) ?? 'null';
  let text = texts.get(value);
  if (text === undefined) {
    text = JSON.stringify(value) ?? 'null';
    texts.set(value, text);
  }
  return text;
}

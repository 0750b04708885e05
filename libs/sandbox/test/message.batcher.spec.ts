import { setImmediate as nextTurn } from 'node:timers/promises';
import { MessageBatcher } from '../src/message.batcher';

/**
 * What one worker gets in one write: everything pushed in the same turn, and a held message
 * (`push(m, holdMs)`) with whatever is pushed before its hold is up. Real timers.
 */
describe('MessageBatcher', () => {
  let writes: string[][];
  let batcher: MessageBatcher<string>;
  beforeEach(() => {
    writes = [];
    batcher = new MessageBatcher<string>((batch) => writes.push(batch), 4);
  });
  afterEach(() => batcher.drain());

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('writes the messages of one turn together, at the end of that turn', async () => {
    batcher.push('a');
    batcher.push('b');
    expect(writes).toEqual([]);
    await nextTurn();
    batcher.push('c');
    await nextTurn();
    expect(writes).toEqual([['a', 'b'], ['c']]);
  });

  it('writes what is queued first when a message\'s large text would take the batch past maxChars', async () => {
    const sized = new MessageBatcher<string>((batch) => writes.push(batch), 256, 100);
    sized.push('a', 0, 60);
    sized.push('b');
    // 60 + 50 > 100: a and b go now, c waits for the turn's end with d (50 + 40).
    sized.push('c', 0, 50);
    sized.push('d', 0, 40);
    expect(writes).toEqual([['a', 'b']]);
    // One message over the bound alone is still written, in its own batch.
    sized.push('e', 0, 500);
    expect(writes).toEqual([['a', 'b'], ['c', 'd']]);
    await nextTurn();
    expect(writes).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
  });

  it('writes at once when the batch is full', () => {
    for (const m of ['a', 'b', 'c', 'd', 'e']) batcher.push(m);
    expect(writes).toEqual([['a', 'b', 'c', 'd']]);
  });

  it('keeps a held message alone until its hold is up', async () => {
    const started = performance.now();
    batcher.push('a', 80);
    await nextTurn();
    await nextTurn();
    expect(writes).toEqual([]);
    while (writes.length === 0) await sleep(5);
    expect(writes).toEqual([['a']]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(75);
  });

  it('writes a held message with the next one pushed, at the end of that one\'s turn', async () => {
    batcher.push('a', 10_000);
    await sleep(20);
    expect(writes).toEqual([]);
    batcher.push('b', 10_000);
    batcher.push('c', 10_000);
    await nextTurn();
    expect(writes).toEqual([['a', 'b', 'c']]);
    // Its hold's timer went with the write: nothing else is written later.
    await sleep(20);
    expect(writes).toEqual([['a', 'b', 'c']]);
  });

  it('a message pushed without a hold takes a held one along at the end of its turn', async () => {
    batcher.push('a', 10_000);
    await nextTurn();
    batcher.push('ping');
    await nextTurn();
    expect(writes).toEqual([['a', 'ping']]);
  });

  it('a hold counts only for the first message of a write: behind others it waits for nothing', async () => {
    batcher.push('a');
    batcher.push('b', 10_000);
    await nextTurn();
    expect(writes).toEqual([['a', 'b']]);
  });

  it('drain takes back a held message and cancels its write', async () => {
    batcher.push('a', 30);
    expect(batcher.drain()).toEqual(['a']);
    await sleep(60);
    expect(writes).toEqual([]);
  });
});

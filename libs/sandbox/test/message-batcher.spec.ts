import { MessageBatcher } from '../src/message.batcher';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('MessageBatcher', () => {
  it('when a turn pushes one message, then it is delivered at once, before the turn ends', () => {
    const batches: number[][] = [];
    const batcher = new MessageBatcher<number>((batch) => batches.push(batch));
    batcher.push(1);
    expect(batches).toEqual([[1]]);
  });

  it('when a turn pushes several, then the first goes at once and the rest in one batch at the end of the turn, in order', async () => {
    const batches: number[][] = [];
    const batcher = new MessageBatcher<number>((batch) => batches.push(batch));
    for (let i = 1; i <= 5; i++) batcher.push(i);
    expect(batches).toEqual([[1]]);
    await nextTurn();
    expect(batches).toEqual([[1], [2, 3, 4, 5]]);
    // The next turn starts over: its first message leaves at once again.
    batcher.push(6);
    batcher.push(7);
    expect(batches).toEqual([[1], [2, 3, 4, 5], [6]]);
    await nextTurn();
    expect(batches).toEqual([[1], [2, 3, 4, 5], [6], [7]]);
  });

  it('when the queue of a turn reaches the batch limit, then it is delivered without waiting for the turn to end', () => {
    const batches: number[][] = [];
    const batcher = new MessageBatcher<number>((batch) => batches.push(batch), 3);
    for (let i = 1; i <= 8; i++) batcher.push(i);
    expect(batches).toEqual([[1], [2, 3, 4], [5, 6, 7]]);
    batcher.flush();
    expect(batches).toEqual([[1], [2, 3, 4], [5, 6, 7], [8]]);
  });

  it('when drained, then what was queued and not yet delivered is handed back and never delivered', async () => {
    const batches: number[][] = [];
    const batcher = new MessageBatcher<number>((batch) => batches.push(batch));
    batcher.push(1);
    batcher.push(2);
    batcher.push(3);
    expect(batcher.drain()).toEqual([2, 3]);
    await nextTurn();
    expect(batches).toEqual([[1]]);
  });
});

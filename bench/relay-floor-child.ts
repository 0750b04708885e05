import ivm from 'isolated-vm';

/**
 * The child of the relay floor (`relay-floor.ts`): what a sandbox worker does at the least for
 * each invocation. It receives a batch of bodies over Node's IPC channel (JSON, as the worker
 * does), passes the batch through one isolated-vm isolate in one asynchronous entry (isolated-vm's
 * thread and back, as `ComponentIsolate.invokeBatch` does), and sends the bodies back in one
 * message. No component runtime, no limits, no parsing of what the guest returns.
 * Started with `--no-node-snapshot` (isolated-vm needs it on Node 20, FACTS.md).
 */
const isolate = new ivm.Isolate({ memoryLimit: 64 });
const context = isolate.createContextSync();
const relay = context.evalSync('(async (batch) => batch)', { reference: true }) as ivm.Reference;

process.on('message', (msg: { id: number; bodies: string }) => {
  relay.apply(undefined, [msg.bodies], { result: { promise: true } }).then(
    (bodies) => process.send!({ id: msg.id, bodies }),
    (error: unknown) => process.send!({ id: msg.id, error: String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));

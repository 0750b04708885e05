/**
 * The scale-out processor role (ARCHITECTURE.md section 3). In the embedded default the server
 * process runs the processors itself; the worker role needs the shared engines (EventStoreDB,
 * Redis leases) of the scale-out issue and refuses to start until they exist, rather than
 * pretending to work.
 */
console.error('sluice worker: the scale-out worker role is not available yet; run `npm start` (embedded default), which runs the processors in-process.');
process.exit(2);

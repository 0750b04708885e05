export * from './checkpoint-store';
export * from './processor-runner';
export * from './projection-failed.error';

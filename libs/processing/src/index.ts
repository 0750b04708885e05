export * from './checkpoint-store';
export * from './processor-runner';

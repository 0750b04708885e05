export * from './send-outcome';
export * from './perform-send';
export { sendFileName } from './send-file-name';

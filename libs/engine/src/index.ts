export * from './sluice-engine';
export * from './source-actor';
export * from './delivery-sender';
export * from './timer-scheduler';
export * from './keyring';
export * from './data-dir-lock';
export * from './private-files';
export * from './http-request-event';

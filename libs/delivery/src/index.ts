export * from './delivery.types';
export * from './webhook-signer';
export * from './ip-classifier';
export * from './egress-guard';
export * from './outbound-http';
export * from './retry-schedule';
export * from './deliver-webhook';

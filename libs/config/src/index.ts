export * from './sluice-config';

export * from './ids';
export * from './secret-box';
export * from './events';
export * from './emit-dedupe';
export * from './source-state';
export * from './component-definition';
export * from './configured-props';

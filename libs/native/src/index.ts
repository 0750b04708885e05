export * from './native-library';
export * from './digest';

/** Jest: swc transform (Nest 12 is ESM-only; ts-jest cannot load it on Node 20, see FACTS.md). */
const swc = ['@swc/jest', {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
  },
  module: { type: 'commonjs' },
}];
const common = {
  transform: { '^.+\\.(t|j)sx?$': swc },
  transformIgnorePatterns: [
    '/node_modules/(?!(@nestjs|file-type|load-esm|uid|token-types|strtok3|@tokenizer|uint8array-extras|cookie)/)',
  ],
  moduleNameMapper: { '^@app/([a-z-]+)$': '<rootDir>/libs/$1/src' },
  testEnvironment: 'node',
  rootDir: __dirname,
};
module.exports = {
  testTimeout: 60000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/{src,libs,apps,bench}/**/*.spec.ts'] },
    { ...common, displayName: 'int', testMatch: ['<rootDir>/{src,libs,apps}/**/*.int-spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
  ],
};

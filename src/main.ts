import { ConfigError, loadConfig } from '@app/config';
import { startServer } from './server';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`sluice: bad configuration: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const server = await startServer(config);
  const boot = server.engine.bootstrapKey;
  if (boot) {
    console.log(`sluice: created account ${boot.accountId}; API key (shown once, also in ${boot.file}):`);
    console.log(`  ${boot.key}`);
  }
  console.log(`sluice: listening on ${server.url} (public URL ${config.publicUrl}, data in ${config.dataDir})`);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    console.log(`sluice: ${signal}, shutting down`);
    server.close().then(() => process.exit(0), (err) => {
      console.error(err);
      process.exit(1);
    });
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err) => {
  if ((err as Error).name === 'DataDirInUseError') {
    console.error(`sluice: ${(err as Error).message}`);
    process.exit(3);
  }
  console.error('sluice: failed to start', err);
  process.exit(1);
});

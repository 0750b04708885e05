import { loadConfig } from '@app/config';
import { randomToken } from '@app/domain';
import { SluiceEngine, lockDataDir } from '@app/engine';

/**
 * Admin commands that work on the data directory directly (`SLUICE_DATA_DIR`), with the server
 * stopped: the directory's lock is held for the whole command, so no server can start meanwhile.
 * Their output is one JSON line, for scripts.
 */
export async function runAdmin(command: 'create-account' | 'rebuild', opts: { name?: string; key?: string }): Promise<number> {
  const config = loadConfig();
  const lock = lockDataDir(config.dataDir);
  try {
    const engine = new SluiceEngine(config, { sandbox: false });
    if (command === 'create-account') {
      await engine.startReadModels();
      const key = opts.key ?? `sk_${randomToken(24)}`;
      let accountId: string;
      try {
        accountId = await engine.accounts.create(opts.name ?? 'account', key);
      } finally {
        await engine.stop();
      }
      console.log(JSON.stringify({ account_id: accountId, api_key: key }));
      return 0;
    }
    const started = Date.now();
    let head: bigint;
    try {
      head = await engine.rebuildReadModels();
    } finally {
      await engine.stop();
    }
    console.log(JSON.stringify({ rebuilt: true, events: Number(head), ms: Date.now() - started }));
    return 0;
  } finally {
    lock.release();
  }
}

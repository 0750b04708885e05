import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SluiceConfig } from '@app/config';
import { SqliteEventStore, uuidv7 } from '@app/event-store';
import type { EventStore } from '@app/event-store';
import { ComponentDefinition, EventTypes, newId, randomToken, SecretBox, Streams, timerPropOf } from '@app/domain';
import type { HttpRequestReceived, NewSluiceEvent, SluiceEvent } from '@app/domain';
import { ReadModelQueries, ReadModelsProjection } from '@app/projections';
import { CheckpointStore, ProcessorRunner } from '@app/processing';
import { SandboxSupervisor } from '@app/sandbox';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { DeliverySender } from './delivery-sender';
import { loadSecretBox } from './keyring';
import { ensurePrivateDir, ensurePrivateFile, PRIVATE_FILE_MODE, tightenIfPresent } from './private-files';
import { httpEventFromRecord, HttpRequestEvent } from './http-request-event';
import { SourceActor } from './source-actor';
import { TimerScheduler } from './timer-scheduler';

/** sha256 hex of an API key: keys are stored only as hashes. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** `createAccount` with a key that is already issued: keys are unique, never moved to another account. */
export class ApiKeyInUseError extends Error {
  constructor() {
    super('this API key is already issued to an account; keys are unique: give another key, or none to get a new one');
    this.name = 'ApiKeyInUseError';
  }
}

/**
 * The composition root of the embedded engine: one SQLite file for the log, the read models and
 * the checkpoints; processors; sandbox workers; one actor per source. Used by the HTTP server,
 * the admin CLI and the benchmarks, so they all run the same code.
 */
export class SluiceEngine {
  readonly store: SqliteEventStore<SluiceEvent>;
  readonly box: SecretBox;
  readonly queries: ReadModelQueries;
  readonly projections: ProcessorRunner;
  readonly sandbox: SandboxSupervisor;
  readonly sender: DeliverySender;
  private deliveriesStarted = false;
  private readonly projection: ReadModelsProjection;
  /** Fires interval and cron timers; `refresh(sourceId)` after every lifecycle change. */
  readonly timers: TimerScheduler;
  private readonly actors = new Map<string, SourceActor>();
  private readonly components = new Map<string, { definition: ComponentDefinition; bundle: string; codeHash: string }>();
  /** Live emits per source id, published once they are in the read models (SSE). */
  readonly emits = new EventEmitter().setMaxListeners(0);
  /** Set when the first start created an account. */
  bootstrapKey?: { accountId: string; key: string; file: string };

  constructor(readonly config: SluiceConfig, opts: { sandbox?: boolean } = {}) {
    ensurePrivateDir(config.dataDir);
    this.box = loadSecretBox(config.dataDir);
    const dbFile = join(config.dataDir, 'sluice.db');
    // Created 0600 before SQLite opens it: SQLite gives the -wal and -shm files the same mode.
    ensurePrivateFile(dbFile);
    tightenIfPresent(`${dbFile}-wal`, `${dbFile}-shm`);
    this.store = new SqliteEventStore({ file: dbFile, synchronous: config.sqliteSync });
    const db = this.store.db;
    // The log, the read models and the checkpoints share this file: a 64 MB page cache and mmap
    // keep their hot pages in memory (the default cache is 2 MB).
    db.pragma('cache_size = -65536');
    db.pragma('mmap_size = 268435456');
    const projection = new ReadModelsProjection(db);
    this.projection = projection;
    const checkpoints = new CheckpointStore(db);
    this.queries = new ReadModelQueries(db);
    this.projections = new ProcessorRunner(this.store, checkpoints, {
      name: projection.name,
      transactional: true,
      apply: (events) => projection.apply(events),
      // New deliveries go to the sender as soon as they are committed; after a restart the
      // sender finds them in the durable schedule instead.
      afterCommit: () => {
        const created = projection.takeCreatedDeliveries();
        if (this.deliveriesStarted) for (const d of created) this.sender.enqueue({ ...d, attempts: 0 });
        for (const e of projection.takeEmitted()) this.emits.emit(e.sourceId, e);
      },
      afterRollback: () => projection.discardCreatedDeliveries(),
    });
    this.sandbox = new SandboxSupervisor({
      workers: config.sandboxWorkers,
      egress: { allow: config.componentEgressAllow, allowVariable: 'SLUICE_COMPONENT_EGRESS_ALLOW' },
      defaultLimits: { memoryMb: config.sandboxMemoryMb, timeoutMs: config.sandboxTimeoutMs, cpuMs: config.sandboxTimeoutMs },
      outputLimits: config.runOutput,
    });
    this.sender = new DeliverySender(this.store, this.queries, this.box, {
      retrySchedule: config.retrySchedule, timeoutMs: config.deliveryTimeoutMs, egress: { allow: config.egressAllow },
      concurrencyPerWebhook: config.deliveryConcurrencyPerWebhook,
    });
    if (opts.sandbox === false) this.sandboxDisabled = true;
    this.timers = new TimerScheduler({
      liveSources: () => this.queries.liveSources(),
      timerOf: (id) => {
        const row = this.queries.source(id);
        const comp = row && this.component(row.component_id);
        return row && comp ? timerPropOf(comp.definition.props, JSON.parse(row.configured_props) as Record<string, unknown>) : undefined;
      },
      // From the log (via the read model): the last timer run, or the last activation when it
      // never fired since, so a restart neither loses nor repeats ticks.
      lastFire: (id) => {
        const row = this.queries.source(id);
        if (!row) return undefined;
        const last = Math.max(row.last_timer_at ?? 0, row.last_activated_at ?? 0);
        return last > 0 ? last : undefined;
      },
      fire: (id, event) => this.actor(id).run('timer', event),
    });
  }

  private sandboxDisabled = false;
  private stopped = false;

  /** Starts only the read models (admin commands: the server must not be running). */
  async startReadModels(): Promise<void> {
    this.projections.start();
    await this.projections.caughtUp();
  }

  /**
   * Starts everything in the order that keeps the guarantees: read models catch up first, then
   * the first account is created if the store is empty, then interrupted lifecycle transitions and
   * recorded-but-unrun requests are resumed, and only then does the dispatcher start.
   */
  async start(): Promise<void> {
    this.projections.start();
    await this.projections.caughtUp();
    if (this.queries.accountCount() === 0) await this.bootstrapAccount();
    if (!this.sandboxDisabled) await this.sandbox.start();
    this.deliveriesStarted = true;
    this.projection.live = true;
    this.sender.start();
    if (!this.sandboxDisabled) {
      await this.recover();
      this.timers.start();
    }
  }

  private async recover(): Promise<void> {
    for (const src of this.queries.liveSources()) {
      if (src.status !== 'deployed') await this.actor(src.id).recover().catch((err) => console.error(`recovering ${src.id} failed`, err));
    }
    for (const req of this.queries.pendingRequests()) {
      const event = await this.requestEvent(req.source_id, req.request_id);
      if (event) void this.actor(req.source_id).run('http', event, req.request_id).catch((err) => console.error(`request ${req.request_id} failed`, err));
    }
  }

  private async requestEvent(sourceId: string, requestId: string): Promise<HttpRequestEvent | undefined> {
    // Requests are found by id in the inbox stream; pending ones are few after a crash.
    const events = await this.store.readStream(Streams.inbox(sourceId));
    const e = events.find((x) => (x.data as HttpRequestReceived).requestId === requestId);
    if (!e) return undefined;
    return httpEventFromRecord(e.data as Record<string, unknown>, this.config.publicUrl);
  }

  private async bootstrapAccount(): Promise<void> {
    const accountId = newId('u');
    const key = this.config.apiKey ?? `sk_${randomToken(24)}`;
    await this.createAccount(accountId, 'default', key);
    const file = join(this.config.dataDir, 'api-key');
    writeFileSync(file, `${key}\n`, { mode: PRIVATE_FILE_MODE });
    tightenIfPresent(file);
    this.bootstrapKey = { accountId, key, file };
  }

  /**
   * Creates an account with one API key (only the key's hash is recorded). A key already issued
   * (to any account, even revoked) is refused with `ApiKeyInUseError`: issuing it again would move
   * it and lock its owner out. The check and the append do not race: every caller (the server's
   * bootstrap, the admin command) holds the data-dir lock, and the read models are caught up.
   */
  async createAccount(accountId: string, name: string, key: string): Promise<void> {
    if (!key || /\s/.test(key)) throw new Error('an API key must be non-empty and contain no whitespace');
    await this.settle();
    const keyHash = hashApiKey(key);
    if (this.queries.accountIssuedKeyHash(keyHash) !== undefined) throw new ApiKeyInUseError();
    await this.store.append(Streams.account(accountId), [
      { type: EventTypes.accountCreated, data: { accountId, name }, metadata: { actor: 'system' } },
      {
        type: EventTypes.apiKeyIssued,
        data: { accountId, keyId: newId('key'), keyHash, prefix: key.slice(0, 7) },
        metadata: { actor: 'system' },
      },
    ], { expectedRevision: 'no_stream' });
    await this.projections.caughtUp();
  }

  /** Appends and waits until the read models reflect the append (read-your-writes for the API). */
  async appendAndProject(stream: string, events: NewSluiceEvent[], expectedRevision?: bigint | 'no_stream' | 'any' | 'stream_exists'): Promise<void> {
    const r = await this.store.append(stream, events.map((e) => ({ ...e, id: e.id ?? uuidv7() })), { expectedRevision });
    await this.projections.waitFor(r.position);
  }

  /** Waits until the read models include everything appended so far. */
  async settle(): Promise<void> {
    await this.projections.waitFor(await this.store.headPosition());
  }

  /** The actor of a source (created on first use). */
  actor(sourceId: string): SourceActor {
    let a = this.actors.get(sourceId);
    if (!a) {
      a = new SourceActor(sourceId, {
        store: this.store,
        box: this.box,
        publicUrl: () => this.config.publicUrl,
        component: (id) => this.component(id),
        invoke: (inv: SandboxInvocation): Promise<SandboxResult> => this.sandbox.invoke(inv),
        maxDbBytesPerSource: this.config.runOutput.maxDbBytesPerSource,
      });
      this.actors.set(sourceId, a);
    }
    return a;
  }

  /** Forgets a deleted source's actor. */
  dropActor(sourceId: string): void {
    this.actors.delete(sourceId);
  }

  /** A saved component's definition and bundle (cached: saved components never change). */
  component(id: string): { definition: ComponentDefinition; bundle: string; codeHash: string } | undefined {
    let c = this.components.get(id);
    if (!c) {
      const row = this.queries.component(id);
      if (!row) return undefined;
      // Workers keep warm isolates per code id: key them by the bundle, not the source text, since
      // the same code can bundle other package versions (unpinned imports) in another component.
      c = {
        definition: JSON.parse(row.definition) as ComponentDefinition,
        bundle: row.bundle,
        codeHash: createHash('sha256').update(row.bundle).digest('hex'),
      };
      this.components.set(id, c);
    }
    return c;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.timers.stop();
    await this.sender.stop();
    await this.projections.stop();
    if (!this.sandboxDisabled) await this.sandbox.stop();
    await this.store.close();
  }
}

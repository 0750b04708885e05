import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { EventTypes, Streams } from '@app/domain';
import { uuidv7 } from '@app/event-store';
import { EngineRuntime } from './engine-runtime';

describe('EngineRuntime.pendingRequestEvent: a pending request found for recovery', () => {
  let dataDir: string;
  let rt: EngineRuntime;
  const sourceId = 'dc_recovering';
  const requests: { requestId: string; position: bigint }[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-pending-'));
    rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dataDir, SLUICE_SQLITE_SYNC: 'normal' }), { sandbox: false });
    for (let n = 0; n < 5; n++) {
      const requestId = uuidv7();
      const { position } = await rt.store.append(Streams.inbox(sourceId), [{
        id: requestId,
        type: EventTypes.httpRequestReceived,
        data: { sourceId, requestId, method: 'POST', path: '/', url: `http://sluice.test/e/k?n=${n}`, query: { n: String(n) }, headers: {}, bodyRaw: `{"n":${n}}`, body: { n } },
        metadata: { actor: 'http' },
      }]);
      requests.push({ requestId, position });
      // Another source's request between them: positions are the log's, not the inbox's.
      await rt.store.append(Streams.inbox('dc_other'), [{
        type: EventTypes.httpRequestReceived,
        data: { sourceId: 'dc_other', requestId: uuidv7(), method: 'GET', path: '/', url: 'http://sluice.test/e/o', query: {}, headers: {}, bodyRaw: '', body: undefined },
        metadata: { actor: 'http' },
      }]);
    }
  });
  afterAll(async () => {
    await rt.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  afterEach(() => jest.restoreAllMocks());

  it('reads the one event at the position its pending row names, never the inbox', async () => {
    const readStream = jest.spyOn(rt.store, 'readStream');
    const { requestId, position } = requests[3];
    const event = await rt.pendingRequestEvent(sourceId, requestId, position);
    expect(event).toMatchObject({ method: 'POST', url: 'http://sluice.test/e/k?n=3', body: { n: 3 }, bodyRaw: '{"n":3}' });
    expect(readStream).not.toHaveBeenCalled();
  });

  it('when the event at that position is another, searches the inbox and still finds the request', async () => {
    const readStream = jest.spyOn(rt.store, 'readStream');
    const { requestId } = requests[2];
    // The position of another source's request, then one past the log's end.
    for (const position of [requests[2].position + 1n, requests[4].position + 100n]) {
      expect(await rt.pendingRequestEvent(sourceId, requestId, position)).toMatchObject({ body: { n: 2 } });
    }
    expect(readStream).toHaveBeenCalledWith(Streams.inbox(sourceId), expect.anything());
  });

  it('a request the inbox does not hold is not found', async () => {
    expect(await rt.pendingRequestEvent(sourceId, uuidv7(), requests[0].position)).toBeUndefined();
  });
});

import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { SluiceConfig } from '@app/config';
import { AppModule } from './app.module';
import { ApiError } from './http/api-error';
import { lockDataDir, SluiceEngine } from '@app/engine';
import { registerSourceEndpoints } from './endpoints/source-endpoint.routes';
import { type FastEndpointTarget, leanEndpointHandler, serveInFront, sourceEndpointFastPath } from './endpoints/source-endpoint.fast-path';
import { LeanEndpointServer } from './endpoints/lean-endpoint-server';
import { registerSourceEventStream } from './sources/source-events.sse';
import { registerSourceLogStream } from './sources/source-logs.sse';
import { registerWorkflowSse } from './workflows/workflow-sse.routes';
import { safeJsonParse } from './http/request-params';
import { httpServerLimits, limitConnections } from './http/http-server-limits';
import { endSseStreams } from './http/sse-stream';
import { startIdleCollector } from './idle-collector';

/** A running server: the engine and the HTTP app. */
export interface RunningServer {
  engine: SluiceEngine;
  app: NestFastifyApplication;
  url: string;
  /** The lean endpoint server in front of Node's (`SLUICE_ENDPOINT_SERVER=lean`, the default). */
  lean: LeanEndpointServer<FastEndpointTarget> | undefined;
  close(): Promise<void>;
}

/**
 * Starts the engine (read models caught up, interrupted work resumed) and then the HTTP server,
 * so nothing is accepted before recovery is done.
 */
export async function startServer(config: SluiceConfig): Promise<RunningServer> {
  // Taken before anything in the data directory is read or created; held until close, or until
  // the process dies (a failed start exits the process).
  const lock = lockDataDir(config.dataDir);
  const engine = new SluiceEngine(config);
  await engine.start();
  const { lean: leanLimits, ...serverLimits } = httpServerLimits(config);
  const adapter = new FastifyAdapter({ bodyLimit: config.maxApiBodyBytes, trustProxy: false, return503OnClosing: true, ...serverLimits });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forEngine(engine), adapter, { logger: ['error', 'warn'], bodyParser: false });
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  limitConnections(fastify.server, config);
  // Our own JSON parser: an empty body is allowed (the spec's clients send params in the query
  // string with Content-Type: application/json), malformed JSON is a 400 naming the problem,
  // and prototype keys are dropped.
  fastify.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: config.maxApiBodyBytes }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, safeJsonParse(text));
    } catch (err) {
      done(new ApiError(400, 'invalid_json', `the body is not valid JSON: ${(err as Error).message}`), undefined);
    }
  });
  fastify.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: config.maxApiBodyBytes }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
  // Errors of the API routes, its body parsers included, reach Nest's error handler and from it
  // the global ApiExceptionFilter: no Fastify error handler of our own (it would replace Nest's).
  const sourceEndpoints = registerSourceEndpoints(fastify, engine);
  let closing = false;
  const isClosing = () => closing;
  serveInFront(fastify.server, sourceEndpointFastPath(sourceEndpoints, isClosing));
  // In front of Node's server, which gets every connection the lean one lets go.
  const lean = config.endpointServer === 'lean' ? LeanEndpointServer.inFront(fastify.server, leanEndpointHandler(sourceEndpoints, isClosing), leanLimits) : undefined;
  fastify.addHook('preClose', (done) => {
    closing = true;
    // Live event streams never end by themselves: each would hold the stop until its client left.
    endSseStreams(fastify);
    lean?.close();
    done();
  });
  registerSourceEventStream(fastify, engine);
  registerSourceLogStream(fastify, engine);
  registerWorkflowSse(fastify, engine);
  await app.listen(config.port, config.host);
  const address = fastify.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  if (!config.publicUrlExplicit) config.publicUrl = `http://${host}:${port}`;
  const idleCollector = startIdleCollector({ onActivity: (listener) => engine.onActivity(listener) });
  return {
    engine,
    app,
    lean,
    url: `http://${host}:${port}`,
    async close() {
      idleCollector.stop();
      await app.close();
      await engine.stop();
      lock.release();
    },
  };
}

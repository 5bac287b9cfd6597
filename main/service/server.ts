import http from 'node:http';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Bindings, ChildLoggerOptions, LogFn, Logger } from 'pino';
import { StorageProviderError } from './bucket/types.js';
import { answerClientError, answerTooLarge, envelopeAnswer, guardConnections } from './connections.js';
import type { ServiceContext } from './context.js';
import { checkingInterval } from './limits.js';
import { ThrottledError } from './client-limits.js';
import { ApiError, CODES, type Envelope } from './envelope.js';
import { HEALTH_PATH, READY_PATH, registerHealthRoutes } from './routes/health.js';
import { registerManageRoutes } from './routes/manage.js';
import { registerMediaRoutes } from './routes/media.js';
import { registerStorageRoutes } from './routes/storage.js';
import { registerWaylineRoutes } from './routes/waylines.js';

const HEALTH_CHECKS: ReadonlySet<string> = new Set([HEALTH_PATH, READY_PATH]);

/** Default request body limit: a callback body is ~1 KiB; 256 KiB leaves room and stops abuse. */
export const DEFAULT_BODY_LIMIT = 256 * 1024;

/**
 * The HTTP side. Every answer, including framework errors (unknown route,
 * wrong method, bad JSON, body too large), is the contract's envelope with a
 * message a person can act on; stack traces only go to the log.
 */
/**
 * The access log: what was asked, by whom, the answer and how long it took (an
 * operator's question when a crew says "it failed"). One line per request, when
 * it is answered: Fastify's default is two, one on arrival and one at the
 * answer, and under load the log is a real share of an instance's CPU.
 */
class AccessLog extends LogController {
  override incomingRequest(): void {
    // Said with the answer instead.
  }

  override requestCompleted(error: Error | null | undefined, req: FastifyRequest, reply: FastifyReply): void {
    const line = { req, res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    // A load balancer's health checks (one a second per instance) only at debug: the log keeps the
    // requests of people; a change of readiness is logged where it happens (credentials-check.ts).
    else if (HEALTH_CHECKS.has(req.url.split('?')[0]!)) reply.log.debug(line, 'request completed');
    else reply.log.info(line, 'request completed');
  }
}

/**
 * Each request's logger (req.log, with its reqId). pino's child() costs about
 * 6 µs of CPU per request (its bindings go through the redaction of
 * secrets); at a level that writes no access line (warn, as a busy instance
 * runs) most requests never log, so their child is made at their first line.
 */
function requestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  childOpts: ChildLoggerOptions,
): FastifyBaseLogger {
  const levels = logger as unknown as Partial<Pick<Logger, 'isLevelEnabled'>>;
  // Not pino (no logger: Fastify's own silent one), or a line per request: made now.
  if (!levels.isLevelEnabled || levels.isLevelEnabled('info') || childOpts.level !== undefined)
    return logger.child(bindings, childOpts);
  let child: FastifyBaseLogger | undefined;
  const made = (): FastifyBaseLogger => (child ??= logger.child(bindings, childOpts));
  // The parent's methods (its disabled levels are no-ops) but for those that write a line.
  const lazy = Object.create(logger) as FastifyBaseLogger;
  for (const level of ['fatal', 'error', 'warn'] as const) {
    if (levels.isLevelEnabled(level)) lazy[level] = (...args: Parameters<LogFn>) => made()[level](...args);
  }
  lazy.child = (b, o) => made().child(b, o);
  return lazy;
}

export function buildServer(
  ctx: ServiceContext,
  opts: { logger: Logger | null; bodyLimit: number },
): FastifyInstance {
  const { limits } = ctx;
  const app: FastifyInstance = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    logController: new AccessLog(),
    childLoggerFactory: requestLogger,
    bodyLimit: opts.bodyLimit,
    // A client that stops sending (headers or body) is cut: see limits.ts.
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: checkingInterval(limits.headersTimeoutMs, limits.requestTimeoutMs),
    },
    // Requests Node's parser refuses (URL and headers over 16 KiB, CR/LF in a header...): see connections.ts.
    clientErrorHandler: (err, socket) =>
      answerClientError(err, socket, (e) => envelopeAnswer(e, { maxHeaderBytes: http.maxHeaderSize })),
    // Malformed percent-encoding in the URL, before any route is found.
    frameworkErrors: (_err, _req, reply: FastifyReply) => {
      void reply
        .code(400)
        .send({ code: CODES.INVALID_REQUEST, message: 'The URL is not valid (bad percent-encoding).' });
    },
  }) as unknown as FastifyInstance;

  // Our own JSON parser: an empty body is "no body" (clients POST to sts with
  // Content-Type: application/json and nothing else), and invalid JSON gets our message.
  // JSON only: without the text/plain parser, other bodies get a clear 415.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(
        new ApiError(
          400,
          CODES.INVALID_JSON,
          `The request body is not valid JSON (${(err as Error).message}).`,
        ),
        undefined,
      );
    }
  });

  // Remember the routes, to tell "wrong method" (405) from "no such route" (404).
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    const pattern = new RegExp(`^${route.url.replace(/:[^/]+/g, '[^/]+')}/?$`);
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    routes.push({ pattern, methods });
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '/';
    const allowed = routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods);
    if (allowed.length > 0) {
      const list = [...new Set(allowed)].join(', ');
      return reply
        .code(405)
        .header('allow', list)
        .send({
          code: CODES.METHOD_NOT_ALLOWED,
          message: `${req.method} is not allowed on ${path}; use ${list}.`,
        } satisfies Envelope);
    }
    return reply.code(404).send({
      code: CODES.ROUTE_NOT_FOUND,
      message: `There is no endpoint ${req.method} ${path}. Check the server address and the API path.`,
    } satisfies Envelope);
  });

  app.setErrorHandler((err: FastifyError | ApiError | StorageProviderError, req, reply) => {
    if (err instanceof ThrottledError) void reply.header('retry-after', String(err.retryAfterSeconds));
    if (err instanceof ApiError) {
      return reply.code(err.httpStatus).send({ code: err.code, message: err.message } satisfies Envelope);
    }
    if (err instanceof StorageProviderError) {
      // In full (the provider's own text is in err.cause) for the operator; the client gets err.message only.
      req.log.warn({ err }, `storage provider failed: ${err.providerReason}`);
      return reply
        .code(502)
        .send({ code: CODES.STORAGE_PROVIDER_FAILED, message: err.message } satisfies Envelope);
    }
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        answerTooLarge(req.raw);
        return reply.code(413).send({
          code: CODES.BODY_TOO_LARGE,
          message: `The request body is larger than the limit of ${opts.bodyLimit} bytes.`,
        } satisfies Envelope);
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return reply.code(415).send({
          code: CODES.UNSUPPORTED_MEDIA_TYPE,
          message: 'Send the request body as JSON, with the header Content-Type: application/json.',
        } satisfies Envelope);
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return reply.code(400).send({
          code: CODES.INVALID_REQUEST,
          message: 'The Content-Length header does not match the request body.',
        } satisfies Envelope);
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply
        .code(status)
        .send({ code: CODES.INVALID_REQUEST, message: err.message } satisfies Envelope);
    }
    req.log.error({ err }, 'request failed');
    return reply.code(500).send({
      code: CODES.INTERNAL,
      message: 'The service had an internal problem. Try again; if it persists, look at the service log.',
    } satisfies Envelope);
  });

  // Connections per client address, and room made at the cap: see connections.ts.
  guardConnections(app.server, limits);
  registerHealthRoutes(app, ctx);
  registerManageRoutes(app, ctx);
  registerWaylineRoutes(app, ctx);
  registerStorageRoutes(app, ctx);
  registerMediaRoutes(app, ctx);
  return app;
}

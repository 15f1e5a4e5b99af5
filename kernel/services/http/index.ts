// HTTP service: server factory, listen helper, error mapping, validator compiler.
export { createHttpServer, listen, startMetricsListener, KEEP_ALIVE_TIMEOUT_MS, DEFAULT_BODY_LIMIT, type SvcHttpServer, type CreateHttpServerOptions, type ListenOptions, type BoundAddress } from './server.ts';
export { mapError, STATUS_BY_KIND, type MappedError, type MapContext } from './error-mapping.ts';
export { svcValidatorCompiler, checkFor, unstorableText } from './validator.ts';

// S3 failures as svc errors: a missing object is NotFound like on every storage; anything else
// names the operation, the key, the bucket and the endpoint with S3's own code, so an operator
// can tell a wrong bucket from a wrong credential from an endpoint nobody answers on.
import { NotFoundError, UnavailableError, messageOf } from '../../../core/errors.ts';

interface SdkError {
  name?: string;
  code?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

/** S3's error code, the HTTP status, or the network error code, for messages and matching. */
export function s3Code(error: unknown): string {
  const e = (error ?? {}) as SdkError;
  return e.Code ?? (e.name !== undefined && e.name !== 'Error' && e.name !== 'S3ServiceException' ? e.name : undefined) ?? e.code ?? `HTTP ${e.$metadata?.httpStatusCode ?? '?'}`;
}

export function isMissing(error: unknown): boolean {
  const e = (error ?? {}) as SdkError;
  const code = s3Code(error);
  return code === 'NoSuchKey' || code === 'NotFound' || (e.$metadata?.httpStatusCode === 404 && code !== 'NoSuchBucket');
}

export const notFound = (key: string): NotFoundError =>
  new NotFoundError('SVC_ERR_STORAGE_NOT_FOUND', `no object at storage key "${key}"`, { details: { key } });

export interface Where {
  bucket: string;
  endpoint: string;
}

export function s3Failure(operation: string, key: string, where: Where, error: unknown): UnavailableError {
  const code = s3Code(error);
  const reason = messageOf(error);
  return new UnavailableError(
    'SVC_ERR_STORAGE_S3',
    `S3 ${operation} of "${key}" in bucket "${where.bucket}" at ${where.endpoint} failed: ${code}${reason && reason !== code ? `: ${reason}` : ''}`,
    { cause: error, details: { operation, key, bucket: where.bucket, s3Code: code } },
  );
}

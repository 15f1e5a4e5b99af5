// A workflow's contentHash (spec: Lock file, workflow entry): SHA-256 of
// `<compileSchemaVersion>:<treeDigest hex>`, followed by `NUL <assetDigest hex>` when the
// workflow declares hashFiles. Plain lowercase hex, no `sha256:` prefix.
import { SvcError } from '../../core/errors.ts';
import { COMPILE_SCHEMA_VERSION } from './compile-schema-version.ts';
import { sha256Hex } from './encoding.ts';

const HEX_DIGEST = /^[0-9a-f]{64}$/;

export function contentHash(treeDigest: string, assetDigest?: string, compileSchemaVersion: number = COMPILE_SCHEMA_VERSION): string {
  // Callers pass digests this module family produced; a malformed one is a programming error.
  if (!HEX_DIGEST.test(treeDigest)) throw new SvcError('SVC_ERR_COMPILE_DIGEST_INVALID', `treeDigest must be 64 lowercase hex characters, got ${JSON.stringify(treeDigest)}`);
  if (assetDigest !== undefined && !HEX_DIGEST.test(assetDigest)) {
    throw new SvcError('SVC_ERR_COMPILE_DIGEST_INVALID', `assetDigest must be 64 lowercase hex characters, got ${JSON.stringify(assetDigest)}`);
  }
  if (!Number.isSafeInteger(compileSchemaVersion) || compileSchemaVersion < 0) {
    throw new SvcError('SVC_ERR_COMPILE_DIGEST_INVALID', `compileSchemaVersion must be a non-negative integer, got ${compileSchemaVersion}`);
  }
  const input = assetDigest === undefined ? `${compileSchemaVersion}:${treeDigest}` : `${compileSchemaVersion}:${treeDigest}\0${assetDigest}`;
  return sha256Hex(Buffer.from(input, 'utf8'));
}

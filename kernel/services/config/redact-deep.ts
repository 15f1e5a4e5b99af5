// The config as a debug bundle or a node's debug route shows it: the named secret paths
// (redact.ts), then every field whose name marks a secret at any depth (the logger's rule, so
// plugin config like `appPrivateKey` or `webhookSecret` goes too), then the password part of any
// URL (`postgres://user:pw@host`).
import { LOG_REDACTED, scrubSecrets } from '../../../core/logging.ts';
import { redactConfig } from './redact.ts';

const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi;

function maskUrlPasswords(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(URL_PASSWORD, `$1${LOG_REDACTED}@`);
  if (Array.isArray(value)) return value.map(maskUrlPasswords);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, maskUrlPasswords(v)]));
  }
  return value;
}

export function redactConfigDeep(config: object): Record<string, unknown> {
  // Section by section: the logger's rule censors a whole field named `secrets`, but the bundle
  // should still show which of its fields are set (their values are redacted above).
  const sections = Object.entries(redactConfig(config) as Record<string, unknown>).map(([name, value]) => [name, maskUrlPasswords(scrubSecrets(value))]);
  return Object.fromEntries(sections) as Record<string, unknown>;
}

// Config service: layering, env names, defaults, redaction.
export { loadConfig, formatConfigIssues, schemaAt, type LoadConfigOptions, type LoadedConfig, type ConfigIssue } from './load.ts';
export { configDefaults } from './defaults.ts';
export { CONFIG_ENV, CONFIG_ENV_BY_PATH, NON_CONFIG_ENV_NAMES, NON_CONFIG_ENV_PREFIXES, isNonConfigEnv } from './env.ts';
export { REDACTED, SENSITIVE_CONFIG_PATHS, ENCRYPTED_CONFIG_PATHS, redactConfig, getPath } from './redact.ts';
export { UNSUPPORTED_CONFIG_FIELDS, unsupportedFieldsOf, type UnsupportedField, type UnsupportedIssue } from './unsupported.ts';

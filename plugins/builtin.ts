// The built-in plugins and how the spec's settings become their config slices. Only the
// composition roots (bin/roots) import this; the kernel knows extension points, never plugins.
import type { PluginEnvironment, PluginSelection } from '../core/plugins/selection.ts';
import type { SvcPlugin } from '../core/plugins/index.ts';
import { filesystemStorage } from './storage/filesystem/index.ts';
import { s3Storage } from './storage/s3/index.ts';
import { awsKmsCustody } from './custody/aws-kms/index.ts';
import { commandCustody } from './custody/command/index.ts';
import { dbCustody } from './custody/db/index.ts';
import { genericSourcePlugin } from './sources/generic/index.ts';
import { githubProvider } from './providers/github/index.ts';
import { gitProvider } from './providers/git/index.ts';
import { localScaler } from './scalers/local/index.ts';
import { kubernetesScaler } from './scalers/kubernetes/index.ts';
import { loadScalerConfig } from '../core/scalers/config-file.ts';
import { join, resolve } from 'node:path';

/** Storage plugins by `storage.type`. */
const STORAGE: Record<string, { plugin: SvcPlugin; slice: (env: PluginEnvironment) => unknown }> = {
  filesystem: {
    plugin: filesystemStorage as SvcPlugin,
    slice: (env) => ({
      root: env.config.storage.fsPath ? resolve(env.config.storage.fsPath) : join(env.dataDir, 'storage'),
      publicBaseUrl: env.publicUrl,
      urlSecret: env.derivedSecret('storage-url'),
    }),
  },
  s3: {
    plugin: s3Storage as SvcPlugin,
    slice: ({ config: { storage } }) => {
      const set = <T>(name: string, value: T | undefined) => (value === undefined ? {} : { [name]: value });
      return {
        ...set('bucket', storage.bucket),
        ...set('region', storage.region),
        ...set('endpoint', storage.endpoint),
        forcePathStyle: storage.forcePathStyle,
        ...set('externalEndpoint', storage.externalEndpoint),
        ...set('uploadEndpoint', storage.uploadEndpoint),
        ...set('accessKeyId', storage.accessKeyId),
        ...set('secretAccessKey', storage.secretAccessKey),
      };
    },
  },
};

/** Custody plugins by `orchestrator.signerKind` (SVC_ORCHESTRATOR_SIGNER_KIND). */
const CUSTODY: Record<string, { plugin: SvcPlugin; slice: (env: PluginEnvironment) => unknown }> = {
  db: { plugin: dbCustody as SvcPlugin, slice: () => ({}) },
  'aws-kms': {
    plugin: awsKmsCustody as SvcPlugin,
    slice: ({ config: { orchestrator: { kms } } }) => ({
      ...(kms.keyArn === undefined ? {} : { keyArn: kms.keyArn }),
      ...(kms.region === undefined ? {} : { region: kms.region }),
      ...(kms.accessKeyId === undefined ? {} : { accessKeyId: kms.accessKeyId }),
      ...(kms.secretAccessKey === undefined ? {} : { secretAccessKey: kms.secretAccessKey }),
      ...(kms.endpoint === undefined ? {} : { endpoint: kms.endpoint }),
    }),
  },
  command: {
    plugin: commandCustody as SvcPlugin,
    slice: ({ config }) => (config.orchestrator.signerCommand === undefined ? {} : { command: config.orchestrator.signerCommand }),
  },
};

/** Source providers: every one signs in (a source names its kind). */
const PROVIDERS: readonly SvcPlugin[] = [githubProvider as SvcPlugin, gitProvider as SvcPlugin];
const GENERIC_SOURCES: readonly SvcPlugin[] = [genericSourcePlugin as SvcPlugin];

/**
 * Scaler plugins by id, signed in when the scaler config (scaler.configPath / configDir) has an
 * entry naming them; their slice is the file's `plugins.<id>` over what the host supplies.
 */
const SCALERS: Record<string, { plugin: SvcPlugin; slice: (env: PluginEnvironment, settings: Record<string, unknown>) => unknown }> = {
  local: {
    plugin: localScaler as SvcPlugin,
    slice: (env, settings) => ({ orchestratorUrl: env.publicUrl, workRoot: join(env.dataDir, 'scaler-local'), ...settings }),
  },
  // Agents connect to orchestratorUrl; in a cluster the operator names the Service (docs/kubernetes.md).
  kubernetes: {
    plugin: kubernetesScaler as SvcPlugin,
    slice: (env, settings) => ({ orchestratorUrl: env.publicUrl, ...settings }),
  },
};

/**
 * Every built-in plugin the orchestrator can sign in, whatever config selects: the contract test
 * enumerates this list, so a plugin added to the tables above is run through its kind's suite.
 */
export function orchestratorBuiltIns(): SvcPlugin[] {
  return [
    ...Object.values(STORAGE).map((s) => s.plugin),
    ...Object.values(CUSTODY).map((c) => c.plugin),
    ...GENERIC_SOURCES,
    ...PROVIDERS,
    ...Object.values(SCALERS).map((s) => s.plugin),
  ];
}

export function orchestratorPlugins(env: PluginEnvironment): PluginSelection {
  const builtIns: SvcPlugin[] = [];
  const config: Record<string, unknown> = {};
  const selection: Record<string, string> = {};

  const storageType = env.config.storage.type;
  const storage = STORAGE[storageType];
  if (storage) {
    builtIns.push(storage.plugin);
    config[`storage:${storageType}`] = storage.slice(env);
  }
  // A third-party storage plugin (plugins.modules) may serve a type we do not ship.
  selection['storage'] = storageType;

  // Provenance signing is on only with an issuer; only the chosen custody signs in (an unused
  // kind's missing settings must not stop the boot).
  const signerKind = env.config.orchestrator.signerKind;
  const custody = CUSTODY[signerKind];
  if (env.config.orchestrator.provenanceIssuer !== undefined && custody) {
    builtIns.push(custody.plugin);
    config[`custody:${signerKind}`] = custody.slice(env);
  }
  selection['custody'] = signerKind;

  // Generic webhook sources: settings live with each source, the plugin reads and normalizes.
  builtIns.push(...GENERIC_SOURCES);
  config['generic-source:generic'] = {};

  // Source providers: every kind signs in (a source names its kind); git keeps its mirrors here.
  builtIns.push(...PROVIDERS);
  config['provider:github'] = {};
  config['provider:git'] = { cacheDir: join(env.dataDir, 'git-cache') };

  // Scalers named by the scaler config (read again by the scaling subsystem, which also reloads
  // it); a third-party scaler comes from plugins.modules with its slice in plugins.config.
  const scalerConfig = loadScalerConfig(env.config.scaler);
  for (const id of new Set(scalerConfig?.scalers.map((s) => s.plugin) ?? [])) {
    const scaler = SCALERS[id];
    if (scaler === undefined) continue;
    builtIns.push(scaler.plugin);
    config[`scaler:${id}`] = scaler.slice(env, scalerConfig?.plugins[id] ?? {});
  }
  return { builtIns, config, selection };
}

// The scaler config file(s): `scaler.configPath` (one YAML or JSON file) or `scaler.configDir`
// (every *.yaml, *.yml and *.json in it). Each entry names a scaler plugin, the labels its agents
// register with and its limits; `plugins.<id>` holds one plugin's own settings, shared by every
// entry that uses it (docs/scalers.md).
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;

/** A custom agent label: no spaces, commas, `*` or leading `!` (the agent's SVC_AGENT_LABELS rule). */
export const SCALER_LABEL_PATTERN = '^[^\\s*!,][^\\s*,]{0,199}$';

export const ScalerEntry = Type.Object(
  {
    /** Unique across all files; names the scaler in logs, the scale_ups table and docs. */
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,62}$' }),
    /** The scaler plugin's id (`local`, or a third-party plugin of kind scaler). */
    plugin: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]*$' }),
    /** Custom labels every agent of this scaler registers with (not `svc:`: the orchestrator adds those). */
    labels: Type.Array(Type.String({ pattern: SCALER_LABEL_PATTERN }), { maxItems: 64 }),
    /** The agents' OS and architecture as the auto labels will say (default: this host's). */
    os: Type.Optional(Type.String({ pattern: '^[a-z0-9._-]+$' })),
    arch: Type.Optional(Type.String({ pattern: '^[a-z0-9._-]+$' })),
    /** Sandboxes the agents can start, wire names (`bare-metal`, `container`, `firecracker`); default `[bare-metal]`. */
    sandboxes: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z0-9._-]+$' }), { maxItems: 8 })),
    /** Agents of this scaler running or starting at once. */
    maxAgents: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    /** Scale-ups started per rolling minute. */
    startsPerMinute: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
    /** A started agent that has not taken a job within this is stopped (scaleDown). */
    idleTimeoutMs: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 86_400_000 })),
  },
  strict,
);
export type ScalerEntry = Static<typeof ScalerEntry>;

export const ScalerFile = Type.Object(
  {
    scalers: Type.Array(ScalerEntry),
    /** Settings of each scaler plugin by id (the plugin's config slice `scaler:<id>`). */
    plugins: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z0-9][a-z0-9._-]*$' }), Type.Object({}))),
  },
  strict,
);
export type ScalerFile = Static<typeof ScalerFile>;

/** Defaults of the optional entry limits. */
export const SCALER_DEFAULTS = Object.freeze({ maxAgents: 4, startsPerMinute: 30, idleTimeoutMs: 300_000, sandboxes: ['bare-metal'] as readonly string[] });

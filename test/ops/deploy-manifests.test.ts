import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Secret, Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config.js';

/*
 * The production recipe (docs/deploy.md): every manifest in deploy/kubernetes is checked against the Kubernetes API's
 * schemas (types, required fields, enums, formats; the `kubernetes-models` package), and the settings that must agree
 * across files are compared: the drain and the grace period, the probes' paths, the user the image runs as, the
 * selectors and the Secret's key. The settings they give the service are its own, and its configuration takes them. The schemas accept unknown fields (as the API's own OpenAPI does), so the fields
 * that matter are also read by name below: a misspelt probe fails here rather than vanishing on a cluster.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KUBERNETES = join(ROOT, 'deploy', 'kubernetes');
/** The names of the settings the service reads: a misspelt one in a manifest would be ignored without a word. */
const SETTING_NAMES = new Set(
  [
    ...readFileSync(join(ROOT, 'src', 'config.ts'), 'utf8').matchAll(
      /'((?:MIXTAPE|DATABASE)_[A-Z0-9_]+|PORT|HOST|LOG_LEVEL|REDIS_URL)'|\benv\.([A-Z][A-Z0-9_]+)/g,
    ),
  ].map((m) => m[1] ?? m[2]!),
);

/** Checks that every name is a setting of the service and that the service starts its configuration from them. */
function expectServiceSettings(settings: Record<string, string>, where: string): void {
  for (const name of Object.keys(settings)) expect(SETTING_NAMES, `${where}: ${name}`).toContain(name);
  expect(() => loadConfig(settings), where).not.toThrow();
}

/** Validates one object as the API would; throws with the schema's message when it does not conform. */
const VALIDATORS: Readonly<Record<string, (data: unknown) => void>> = {
  'v1/Secret': (data) => {
    new Secret(data as ConstructorParameters<typeof Secret>[0]).validate();
  },
  'v1/Service': (data) => {
    new Service(data as ConstructorParameters<typeof Service>[0]).validate();
  },
  'apps/v1/Deployment': (data) => {
    new Deployment(data as ConstructorParameters<typeof Deployment>[0]).validate();
  },
  'batch/v1/Job': (data) => {
    new Job(data as ConstructorParameters<typeof Job>[0]).validate();
  },
  'policy/v1/PodDisruptionBudget': (data) => {
    new PodDisruptionBudget(data as ConstructorParameters<typeof PodDisruptionBudget>[0]).validate();
  },
};

interface Manifest {
  readonly file: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
}

function readManifests(): Manifest[] {
  const manifests: Manifest[] = [];
  for (const file of readdirSync(KUBERNETES).filter((name) => name.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(KUBERNETES, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
      const data = doc.toJS() as Record<string, unknown> | null;
      if (data === null) continue;
      manifests.push({ file, type: `${String(data.apiVersion)}/${String(data.kind)}`, data });
    }
  }
  return manifests;
}

function validate(manifest: Pick<Manifest, 'type' | 'data'>): void {
  const check = VALIDATORS[manifest.type];
  if (check === undefined) throw new Error(`no schema for ${manifest.type}`);
  check(manifest.data);
}

const manifests = readManifests();

/** A copy of the one manifest of TYPE. */
function one(type: string): unknown {
  const found = manifests.filter((m) => m.type === type);
  expect(found, type).toHaveLength(1);
  return structuredClone(found[0]!.data);
}

interface Container {
  image: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  startupProbe?: { httpGet?: { path: string }; periodSeconds: number; failureThreshold: number };
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
}
interface DeploymentData {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}
interface JobData {
  spec: { template: { spec: PodSpec } };
}

function env(container: Container, name: string): string | undefined {
  return container.env?.find((e) => e.name === name)?.value;
}

/** The number that the first group of PATTERN captures in TEXT; throws when there is none. */
function seconds(text: string, pattern: RegExp): number {
  const match = pattern.exec(text);
  if (match?.[1] === undefined) throw new Error(`${String(pattern)} not found`);
  return Number(match[1]);
}

describe('Kubernetes manifests', () => {
  it('are the recipe of docs/deploy.md, each of a kind the schemas know', () => {
    expect(manifests.map((m) => m.type).sort()).toEqual([
      'apps/v1/Deployment',
      'batch/v1/Job',
      'policy/v1/PodDisruptionBudget',
      'v1/Secret',
      'v1/Service',
    ]);
  });

  for (const manifest of manifests) {
    it(`${manifest.file}: ${manifest.type} conforms to the Kubernetes schema`, () => {
      expect(() => {
        validate(manifest);
      }).not.toThrow();
    });
  }

  it('a broken manifest fails the same validation', () => {
    const deployment = one('apps/v1/Deployment') as DeploymentData;
    const broken: [string, (d: DeploymentData) => void, RegExp][] = [
      ['replicas as a word', (d) => ((d.spec as { replicas: unknown }).replicas = 'two'), /replicas must be integer/],
      [
        'no containers',
        (d) => delete (d.spec.template.spec as Partial<PodSpec>).containers,
        /required property 'containers'|containers/,
      ],
      [
        'a port as text',
        (d) => ((d.spec.template.spec.containers[0]!.ports![0]! as { containerPort: unknown }).containerPort = '8080'),
        /containerPort must be integer/,
      ],
      [
        'an unknown pull policy',
        (d) => Object.assign(d.spec.template.spec.containers[0]!, { imagePullPolicy: 'Sometimes' }),
        /imagePullPolicy must be equal to one of the allowed values/,
      ],
    ];
    for (const [what, breakIt, message] of broken) {
      const data = structuredClone(deployment);
      breakIt(data);
      expect(() => {
        validate({ type: 'apps/v1/Deployment', data: data as unknown as Record<string, unknown> });
      }, what).toThrow(message);
    }
    expect(() => {
      validate({ type: 'apps/v1/DaemonSet', data: {} });
    }).toThrow(/no schema/);
  });

  it('the grace period covers preStop, the drain delay and the shutdown timeout, with a margin', () => {
    const pod = (one('apps/v1/Deployment') as DeploymentData).spec.template.spec;
    const container = pod.containers[0]!;
    const preStop = container.lifecycle?.preStop?.exec?.command;
    expect(preStop?.[0]).toBe('sleep');
    const drain = Number(env(container, 'MIXTAPE_DRAIN_DELAY_SECONDS'));
    const shutdown = Number(env(container, 'MIXTAPE_SHUTDOWN_TIMEOUT_SECONDS'));
    expect(drain).toBe(5);
    expect(shutdown).toBe(10);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(Number(preStop?.[1]) + drain + shutdown + 5);
  });

  it('probes: readiness on /readyz, liveness and start-up on /healthz, on the image port', () => {
    const container = (one('apps/v1/Deployment') as DeploymentData).spec.template.spec.containers[0]!;
    expect(container.ports).toEqual([expect.objectContaining({ name: 'http', containerPort: 8080 })]);
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.startupProbe?.httpGet?.path).toBe('/healthz');
    // `serve` waits up to 60 s for its database before it listens: start-up must outlast that.
    expect(container.startupProbe!.periodSeconds * container.startupProbe!.failureThreshold).toBeGreaterThan(60);
  });

  it('the pods run as the image user, read-only, with the resources the bench measured', () => {
    const containerfile = readFileSync(join(ROOT, 'Containerfile'), 'utf8');
    const imageUser = Number(/^USER (\d+):\d+$/m.exec(containerfile)?.[1]);
    expect(imageUser).toBeGreaterThan(0);
    for (const type of ['apps/v1/Deployment', 'batch/v1/Job']) {
      const pod = (one(type) as DeploymentData | JobData).spec.template.spec;
      expect(pod.securityContext, type).toMatchObject({ runAsNonRoot: true, runAsUser: imageUser });
      for (const container of pod.containers) {
        expect(container.securityContext, type).toMatchObject({
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
        });
        expect(container.resources?.requests?.memory, type).toMatch(/^\d+Mi$/);
        expect(container.resources?.limits?.memory, type).toMatch(/^\d+Mi$/);
      }
    }
    const api = (one('apps/v1/Deployment') as DeploymentData).spec.template.spec.containers[0]!;
    // 254 MiB resident at most under the bench's load (docs/benchmarks.md): the limit leaves room above it.
    expect(parseInt(api.resources!.limits!.memory!, 10)).toBeGreaterThan(254);
  });

  it('the Service, the disruption budget, the Job and the Secret agree with the Deployment', () => {
    const deployment = one('apps/v1/Deployment') as DeploymentData;
    const labels = deployment.spec.template.metadata.labels;
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    const service = one('v1/Service') as {
      spec: { selector: Record<string, string>; ports: { targetPort: string }[] };
    };
    expect(service.spec.selector).toEqual(labels);
    expect(service.spec.ports.map((p) => p.targetPort)).toEqual(['http']);
    const budget = one('policy/v1/PodDisruptionBudget') as {
      spec: { selector: { matchLabels: Record<string, string> }; maxUnavailable: number };
    };
    expect(budget.spec.selector.matchLabels).toEqual(labels);
    expect(budget.spec.maxUnavailable).toBeLessThan(deployment.spec.replicas);

    const secret = one('v1/Secret') as { metadata: { name: string }; stringData: Record<string, string> };
    const job = (one('batch/v1/Job') as JobData).spec.template.spec.containers[0]!;
    expect(job.args).toEqual(['migrate']);
    for (const container of [deployment.spec.template.spec.containers[0]!, job]) {
      const ref = container.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef;
      expect(ref).toEqual({ name: secret.metadata.name, key: 'DATABASE_URL' });
      expect(container.image).toBe(deployment.spec.template.spec.containers[0]!.image);
    }
    expect(secret.stringData.DATABASE_URL).toMatch(/^postgres:\/\//);
  });
  it('the settings in the Deployment and the Job are settings of the service, with values it takes', () => {
    expect(SETTING_NAMES.size).toBeGreaterThan(20);
    expect(SETTING_NAMES).toContain('MIXTAPE_DRAIN_DELAY_SECONDS');
    const secret = one('v1/Secret') as { stringData: Record<string, string> };
    for (const type of ['apps/v1/Deployment', 'batch/v1/Job']) {
      const container = (one(type) as DeploymentData | JobData).spec.template.spec.containers[0]!;
      const settings: Record<string, string> = {};
      for (const entry of container.env ?? []) {
        const key = entry.valueFrom?.secretKeyRef?.key;
        settings[entry.name] = entry.value ?? (key === undefined ? '' : secret.stringData[key]!);
      }
      expectServiceSettings(settings, type);
    }
    // And the check can fail: a misspelt name, or a value the service refuses.
    expect(() => {
      expectServiceSettings({ MIXTAPE_DRAIN_DELAY_SECOND: '5' }, 'misspelt');
    }).toThrow();
    expect(() => {
      expectServiceSettings({ MIXTAPE_TRUST_PROXY: 'true' }, 'refused');
    }).toThrow();
  });
});

describe('systemd unit', () => {
  const unit = readFileSync(join(ROOT, 'deploy', 'systemd', 'mixtape.service'), 'utf8');
  const settings = readFileSync(join(ROOT, 'deploy', 'systemd', 'mixtape.env'), 'utf8');

  it('stops within the drain delay and the shutdown timeout before systemd and podman kill it', () => {
    const drain = seconds(settings, /^MIXTAPE_DRAIN_DELAY_SECONDS=(\d+)$/m);
    const shutdown = seconds(settings, /^MIXTAPE_SHUTDOWN_TIMEOUT_SECONDS=(\d+)$/m);
    const podmanStop = seconds(unit, /--stop-timeout (\d+)/);
    expect(podmanStop).toBeGreaterThanOrEqual(drain + shutdown + 5);
    expect(seconds(unit, /^ExecStop=.* --time (\d+)/m)).toBe(podmanStop);
    expect(seconds(unit, /^TimeoutStopSec=(\d+)$/m)).toBeGreaterThan(podmanStop);
  });

  it('its settings are settings of the service, with values it takes', () => {
    const env = Object.fromEntries(
      settings
        .split('\n')
        .filter((line) => line.trim() !== '' && !line.startsWith('#'))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    ) as Record<string, string>;
    expect(Object.keys(env)).toContain('DATABASE_URL');
    expectServiceSettings(env, 'mixtape.env');
  });

  it('runs the image read-only with its data in a volume, and migrates first', () => {
    expect(unit).toMatch(/^ExecStartPre=\/usr\/bin\/podman run [^]*? localhost\/mixtape:latest migrate$/m);
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/podman run [^]*?--volume mixtape-data:\/data --read-only/m);
    expect(settings).toMatch(/^DATABASE_URL=sqlite:\/data\/mixtape\.db$/m);
  });
});

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The environment for a child process that runs the service: the parent's, minus every setting of the service
 * (so that nothing from the developer's shell leaks in) and `NODE_OPTIONS`, plus the given settings.
 */
export function serviceEnvironment(parent: Env, settings: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(parent)) {
    if (value === undefined || key.startsWith('MIXTAPE_') || key.startsWith('DATABASE_')) continue;
    if (['NODE_OPTIONS', 'PORT', 'HOST', 'LOG_LEVEL', 'REDIS_URL'].includes(key)) continue;
    env[key] = value;
  }
  return { ...env, ...settings };
}

package android.app;
/** Stand-in (stubs/README.md). API 31. */
public final class ForegroundServiceStartNotAllowedException extends ServiceStartNotAllowedException {}

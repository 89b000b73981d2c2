package android.app;
/** Stand-in (stubs/README.md). API 31. */
public abstract class ServiceStartNotAllowedException extends IllegalStateException {}

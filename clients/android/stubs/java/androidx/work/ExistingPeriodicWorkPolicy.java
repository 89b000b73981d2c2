package androidx.work;
/** Stand-in (stubs/README.md). */
public enum ExistingPeriodicWorkPolicy { REPLACE,KEEP,UPDATE }

package androidx.work;
/** Stand-in (stubs/README.md). */
public enum ExistingWorkPolicy { REPLACE,KEEP,APPEND }

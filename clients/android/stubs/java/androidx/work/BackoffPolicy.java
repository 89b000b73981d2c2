package androidx.work;
/** Stand-in (stubs/README.md). */
public enum BackoffPolicy { EXPONENTIAL,LINEAR }

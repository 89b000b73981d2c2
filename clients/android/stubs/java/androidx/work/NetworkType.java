package androidx.work;
/** Stand-in (stubs/README.md). */
public enum NetworkType { CONNECTED,UNMETERED }

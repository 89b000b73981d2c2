package androidx.annotation;
/** Stand-in (stubs/README.md). */
@java.lang.annotation.Retention(java.lang.annotation.RetentionPolicy.CLASS)
public @interface Nullable {}

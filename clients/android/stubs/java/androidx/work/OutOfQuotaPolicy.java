package androidx.work;
/** Stand-in (stubs/README.md). */
public enum OutOfQuotaPolicy { RUN_AS_NON_EXPEDITED_WORK_REQUEST,DROP_WORK_REQUEST }

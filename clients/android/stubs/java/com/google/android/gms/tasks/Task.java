package com.google.android.gms.tasks;
import androidx.annotation.NonNull;
import androidx.annotation.Nullable;
/** Stand-in (stubs/README.md). */
public abstract class Task<TResult> {
    public abstract boolean isSuccessful();
    public abstract TResult getResult();
    public abstract @Nullable Exception getException();
    public @NonNull Task<TResult> addOnCompleteListener(@NonNull OnCompleteListener<TResult> listener) { throw new RuntimeException("Stub!"); }
}

package com.google.android.gms.tasks;
import androidx.annotation.NonNull;
/** Stand-in (stubs/README.md). */
public interface OnCompleteListener<TResult> {
    void onComplete(@NonNull Task<TResult> task);
}
